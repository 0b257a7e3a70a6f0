import { hasCode } from '../errors.ts'
import type { Logger } from '../log/logger.ts'
import { followSync } from '../log/syncProgress.ts'
import type { EnsureRegisteredReturnType } from '../monitor/registration.ts'
import type { HttpServer } from './httpServer.ts'
import { StartupError, startupStep } from './serve.ts'
import { describeError } from './servedNode.ts'

/** A service's REST API as it is served: the monitoring service's and the pathfinding service's. */
export type ServedServiceApi = {
  server: HttpServer
  /** http://host:port/api/v1 */
  apiUrl: string
  /** Resolves with the error of the first request that failed with a bug (the API then keeps answering 500 to it). */
  internalError: Promise<unknown>
}

/** What `runService` needs of a service: `sluice monitor`'s and `sluice pathfinding`'s. */
export type RunnableService = {
  readonly address: string
  start(options: { url: string }): Promise<unknown>
  stop(): Promise<void>
  status(): { syncedBlock: bigint; latestBlock: bigint; registration: EnsureRegisteredReturnType | undefined }
  /** Resolves when the service stops on its own (its store failed). */
  readonly failed: Promise<Error>
}

/** Why a service could not be made, in one line for the flags that caused it; undefined for a bug. */
export function explainServiceStart(kind: string, flags: { rpc: readonly string[]; dataDir: string }): (error: Error) => string | undefined {
  return (e) => {
    if (hasCode(e, 'CHAIN_RPC', 'CHAIN_ID_MISMATCH')) return `--rpc ${flags.rpc.join(',')}: ${describeError(e)}`
    if (hasCode(e, 'STORAGE_LOCKED')) return `${e.message}: is another ${kind} running on --data-dir ${flags.dataDir}?`
    if (hasCode(e, 'STORAGE', 'STORAGE_VERSION')) return `cannot open the store in ${flags.dataDir}: ${e.message}`
    return undefined
  }
}

export type RunServiceParameters = {
  /** 'monitoring service', 'pathfinding service': for the log. */
  kind: string
  service: RunnableService
  /** Serves the service's API; AddressInUseError when the port is taken. */
  serveApi: () => Promise<ServedServiceApi>
  /** The API's address as --api gave it, and as parsed. */
  api: { flag: string; host: string; port: number }
  flags: { url?: string | undefined; confirmations: number; dataDir: string }
  chainId: number
  signal: { received: Promise<string> }
  log: Logger
  /** Said once the service is ready, before "Ready": its transport, its price. */
  sayReady: () => void
}

/**
 * A service process from its API to its end, as `sluice monitor` and `sluice pathfinding` run it: the API is served,
 * the service starts (registration, first sync, its progress in the log) while Ctrl-C or SIGTERM may stop it, and
 * then it runs until a signal (exit code 0), its failure or a bug in its API (1). Resolves with the exit code.
 */
export async function runService(p: RunServiceParameters): Promise<number> {
  const { service, flags, log } = p
  let served: ServedServiceApi
  try {
    served = await p.serveApi()
  } catch (e) {
    await service.stop()
    if (hasCode(e, 'ADDRESS_IN_USE'))
      throw new StartupError(`--api ${p.api.flag}: ${p.api.host}:${p.api.port} is already in use (choose another address or port)`)
    throw e
  }
  const server = served.server
  log.info(`Sluice ${p.kind} {address} on chain {chainId}, data in {dataDir}`, { address: service.address, chainId: p.chainId, dataDir: flags.dataDir })
  log.info('REST API: {url}', { url: served.apiUrl })
  const starting = startupStep(
    // Published in the ServiceRegistry: where the service's API is, unless --url says otherwise.
    () => service.start({ url: flags.url ?? server.url }),
    (e) => {
      if (hasCode(e, 'REGISTRATION_FAILED')) return `cannot register in the ServiceRegistry: ${e.message}`
      if (hasCode(e, 'CHAIN_RPC', 'INSUFFICIENT_FUNDS_FOR_GAS')) return `${describeError(e)}`
      return undefined
    },
  )
  // A Ctrl-C during the registration or the first sync stops it all; the start then ends on its own.
  starting.catch(() => {})
  // The first sync's progress (the blocks confirmed and not synced yet), until the start is over.
  const confirmations = BigInt(flags.confirmations)
  const stopProgress = followSync(
    () => {
      const { syncedBlock, latestBlock } = service.status()
      const blocksToSync = latestBlock - confirmations - syncedBlock
      return { syncedBlock, blocksToSync: blocksToSync > 0n ? blocksToSync : 0n }
    },
    { logger: log },
  )
  let first: string | undefined
  try {
    first = await Promise.race([starting.then(() => undefined), p.signal.received])
  } catch (e) {
    await service.stop()
    await server.close(1_000)
    throw e
  } finally {
    stopProgress()
  }
  if (first !== undefined) {
    log.info('{signal}: stopping', { signal: first })
    await server.close(1_000)
    await service.stop()
    log.info('stopped')
    return 0
  }
  const registration = service.status().registration
  if (registration)
    log.info('Registered in the ServiceRegistry until {validTill}, URL {url}', {
      validTill: new Date(Number(registration.validTill) * 1000).toISOString(),
      url: registration.url,
    })
  // A standby on PostgreSQL (docs/decisions/0077): another instance leads and registered; this one answers the API.
  else log.info('Standby: another instance holds the lease and leads; this one answers the API and takes over if it stops')
  p.sayReady()
  log.info('Ready: synced to block {syncedBlock}', { syncedBlock: service.status().syncedBlock })

  const end = await Promise.race([
    p.signal.received.then((s) => ({ reason: 'signal' as const, signal: s })),
    service.failed.then((error) => ({ reason: 'failed' as const, error })),
    served.internalError.then((error) => ({ reason: 'internal error' as const, error })),
  ])
  if (end.reason === 'signal') log.info('{signal}: stopping', { signal: end.signal })
  else log.error(`${end.reason === 'failed' ? 'the service failed' : 'internal error in the API'}; stopping`, { error: end.error })
  await server.close(1_000)
  await service.stop()
  log.info('stopped')
  return end.reason === 'signal' ? 0 : 1
}
