// The chain layer: viem clients, event sync, block watching, and transactions of one node account.
// Browser-safe: nothing here (or below) imports a node:* module.
export * from './blockWatcher.ts'
export * from './chainClient.ts'
export * from './chainEvents.ts'
export * from './errors.ts'
export * from './eventSync.ts'
export * from './getLogsByChunk.ts'
export * from './reads.ts'
export * from './erc20.ts'
export * from './tokenNetworkActions.ts'
export * from './transactionQueue.ts'
export * from './transactions.ts'
export * from './userDepositActions.ts'
