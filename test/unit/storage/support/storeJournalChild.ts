// A second Node process for the monitoring service's journal test: the service's store and its journal, written as a
// queue does until the parent kills it with SIGKILL (test/support/journalWriter.ts).
import type { Address } from 'viem'
import { MonitorStore } from '../../../../src/monitor/store.ts'
import { storeJournal } from '../../../../src/storage/storeJournal.ts'
import { writeUntilKilled } from '../../../support/journalWriter.ts'

const [dataDir, monitoringService, address] = process.argv.slice(2) as [string, Address, Address]
await writeUntilKilled(storeJournal(await MonitorStore.open(dataDir, { chainId: 31337, monitoringService, address })))
