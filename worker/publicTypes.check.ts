/**
 * The page's types (publicTypes.ts) against the node's: `tsc -p .` fails here when one changes without the other.
 * Type-level only; nothing imports this file.
 */
import type { EIP1193Provider } from 'viem'
import type { Deployment as NodeDeployment } from '../src/chain/deployment.ts'
import type { Meta, StorageDump as NodeStorageDump } from '../src/storage/storage.ts'
import type { RemoteProvider } from './nodeWorkerMain.ts'
import type { NodeConfig } from '../src/node/nodeConfig.ts'
import type { Address, Deployment, Eip1193Provider, Hex, NodeOptions, StorageDump } from './publicTypes.ts'

/** The same keys, and each type accepts the other (so an option added to one but not the other fails). */
type Same<A, B> = [keyof A, keyof B] extends [keyof B, keyof A] ? ([A] extends [B] ? ([B] extends [A] ? true : false) : false) : false
type Holds<T extends true> = T

export type PublicTypesMatch = [
  Holds<Same<Address, import('viem').Address>>,
  Holds<Same<Hex, import('viem').Hex>>,
  Holds<Same<Deployment, NodeDeployment>>,
  Holds<Same<Deployment['contracts'][keyof Deployment['contracts']], NodeDeployment['contracts'][keyof NodeDeployment['contracts']]>>,
  // The options: the worker's are the page's (nodeWorkerMain.ts's NodeWorkerOptions), and createNode takes them as its own.
  Holds<NodeOptions extends Partial<NodeConfig> ? true : false>,
  Holds<Same<Eip1193Provider, RemoteProvider>>,
  // A viem wallet client's provider is a provider here.
  Holds<EIP1193Provider extends Eip1193Provider ? true : false>,
  // What the node exports is a dump; the page hands a dump back as it got it (the store checks it on import).
  Holds<NodeStorageDump extends StorageDump ? true : false>,
  Holds<Same<StorageDump['meta'], Meta>>,
]
