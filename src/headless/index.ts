/**
 * `@sluice/node`'s Node API: a headless node in your own process, with the REST API's operations as typed methods
 * (docs/decisions/0049-node-api.md).
 *
 *   const node = await startNode({ rpc, deployment: 'deployments/31337.json', key, dataDir: './data' })
 *   await node.pay(token, target, { amount: 5n })
 *   await node.stop()
 */
export { startNode } from './startNode.ts'
export { NodeStoppedError } from '../node/errors.ts'
export type { HeadlessNode, NodeStopped } from './startNode.ts'
export { InvalidOptionsError } from './options.ts'
export type { StartNodeOptions } from './options.ts'
export type { TransportName } from './transport.ts'
export { NodeApiError } from '../../worker/nodeClient.ts'
export type { Address } from '../../worker/publicTypes.ts'
export type {
  Amount,
  Answer,
  ApiPath,
  AsJson,
  Body,
  Channel,
  MethodOf,
  NodeClient,
  NodeStatusJson,
  PaymentEvent,
  PaymentResult,
} from '../../worker/nodeClient.ts'
export type { PushEvent, PushListener } from '../../worker/subscription.ts'
export type { components, paths } from '../api/openapi.gen.ts'
export type { ApiErrorCode, ErrorCode } from '../api/errorCodes.ts'
export type { Deployment } from '../chain/deployment.ts'
export type { Keystore } from '../chain/keystore.ts'
export type { StorageDump } from '../storage/storage.ts'
export type { Logger, LogThreshold } from '../log/logger.ts'
