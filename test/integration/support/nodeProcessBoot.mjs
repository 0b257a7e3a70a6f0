// Entry of a node process (nodeProcess.ts). Node loads the big packages several times faster before tsx's
// hooks are in the way (as bin/sluice.mjs does for viem), which shortens every start and restart by seconds.
await Promise.all(
  [
    'viem',
    'viem/accounts',
    'libp2p',
    '@libp2p/gossipsub',
    '@libp2p/noise',
    '@libp2p/yamux',
    '@libp2p/websockets',
    '@libp2p/circuit-relay-v2',
    '@libp2p/identify',
    'classic-level',
  ].map((m) => import(m)),
)
const { register } = await import('tsx/esm/api')
register()
await import('./nodeProcess.ts')
