import { loadNativeSecp256k1 } from '../cli/nativeSecp256k1.ts'
import { servePathfindingApi } from '../cli/servedPathfinding.ts'
import { serviceMediationFee } from '../pathfinding/mediationFee.ts'
import { createPathfindingService, type PathfindingService } from '../pathfinding/service/service.ts'
import { startDevnetService, type DevnetService, type DevnetServiceSetup } from './devnetService.ts'

export type DevnetPathfinding = DevnetService<PathfindingService>

/**
 * The devnet's pathfinding service (`sluice pathfinding`, docs/decisions/0072), free (no IOU asked) unless given a
 * `serviceFee` (the routing bench's), set up as every
 * devnet service is (devnetService.ts: its own key, funded, on the nodes' transport), its REST API on `port`,
 * registered with that URL once it serves. Started before the nodes, which announce their channels to it
 * (docs/decisions/0073).
 */
export function startPathfindingService(
  setup: DevnetServiceSetup & { port: number; serviceFee?: bigint; started: (pathfinding: DevnetPathfinding) => void },
): Promise<DevnetPathfinding> {
  return startDevnetService(setup, {
    name: 'pathfinding service',
    short: 'pathfinding',
    create: async (account) =>
      createPathfindingService({
        rpc: setup.rpcUrl,
        deployment: setup.deployment,
        key: account.key,
        secp256k1: await loadNativeSecp256k1(),
        dataDir: account.dataDir,
        transport: account.transport,
        mediationFee: serviceMediationFee,
        confirmations: 0,
        pollingInterval: 100,
        ...(setup.serviceFee === undefined ? {} : { serviceFee: setup.serviceFee }),
        log: account.log,
      }),
    serve: (service, account) =>
      servePathfindingApi({
        service,
        host: '127.0.0.1',
        port: setup.port,
        ...(account.peerId ? { transportInfo: { peerId: account.peerId, relays: setup.transport.relay?.multiaddrs ?? [] } } : {}),
      }),
    started: setup.started,
  })
}
