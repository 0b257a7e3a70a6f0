/**
 * `sluice/browser`: what a dApp's page imports. `startNode()` starts (or joins) the origin's node; then
 * `fetch('/api/v1/...')` reaches it from every tab, and the returned object has the REST operations as methods.
 */
export { importState, startNode, InvalidOptionsError, NodeWorkerError, NotControlledError, StartTimeoutError, VersionSkewError } from './host.ts'
export type { NodeStopped, SluiceBrowserNode, StartNodeOptions, StartStep, WebRtcConnections } from './host.ts'
export type { WebRtcConnectionInfo } from './webrtcBridge.ts'
export { BrowserUnsupportedError, type BrowserFeature } from './browserSupport.ts'
export { PersistTimeoutError } from './persistence.ts'
export { NodeApiError } from './nodeClient.ts'
export type { Amount, AsJson, Channel, NodeClient, NodeStatusJson, PaymentEvent, PaymentResult } from './nodeClient.ts'
export type { PushEvent, PushEventOf, PushListener } from './subscription.ts'
export { ServiceWorkerError } from './controlled.ts'
export { PassphraseRequiredError } from './keyStore.ts'
export type { Keystore } from '../src/chain/keystore.ts'
export type { Address, Deployment, Eip1193Provider, Hex, NodeOptions, StorageDump } from './publicTypes.ts'
export type { ApiErrorCode, ErrorCode, PageErrorCode } from '../src/api/errorCodes.ts'
