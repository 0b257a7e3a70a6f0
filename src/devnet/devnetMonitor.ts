import { loadNativeSecp256k1 } from '../cli/nativeSecp256k1.ts'
import { serveMonitorApi } from '../cli/servedMonitor.ts'
import { createMonitoringService, type MonitoringService } from '../monitor/service.ts'
import { startDevnetService, type DevnetService, type DevnetServiceSetup } from './devnetService.ts'

export type DevnetMonitor = DevnetService<MonitoringService>

/**
 * The devnet's monitoring service (`sluice monitor`, docs/decisions/0031), set up as every devnet service is
 * (devnetService.ts: its own key, funded, on the nodes' transport), its REST API on `port`, registered once it serves.
 */
export function startMonitoringService(setup: DevnetServiceSetup & { port: number; started: (monitor: DevnetMonitor) => void }): Promise<DevnetMonitor> {
  return startDevnetService(setup, {
    name: 'monitoring service',
    short: 'monitor',
    create: async (account) =>
      createMonitoringService({
        rpc: setup.rpcUrl,
        deployment: setup.deployment,
        key: account.key,
        secp256k1: await loadNativeSecp256k1(),
        dataDir: account.dataDir,
        transport: account.transport,
        confirmations: 0,
        pollingInterval: 100,
        log: account.log,
      }),
    serve: (service, account) => serveMonitorApi({ service, host: '127.0.0.1', port: setup.port, peerId: account.peerId }),
    started: setup.started,
  })
}
