import { readdirSync } from 'node:fs'
import { relative } from 'node:path'

/**
 * A dApp's TypeScript against the installed package (decision 0048): what must type-check with `sluice` alone (and
 * react's types for sluice/react), under the strictest settings a dApp may have, and wrong uses that must not, so
 * that the types are precise rather than `any`.
 */
export const CONSUMER_TSCONFIG = {
  compilerOptions: {
    target: 'ES2022',
    module: 'ESNext',
    moduleResolution: 'bundler',
    lib: ['ES2022', 'DOM'],
    strict: true,
    skipLibCheck: false,
    noEmit: true,
    types: [],
  },
  include: ['*.ts'],
}

/** startNode's options, the node's methods, NodeApiError and sluice/client. */
export const CONSUMER_USES = `import { importState, NodeApiError, startNode, type Deployment, type Eip1193Provider, type StartNodeOptions } from 'sluice/browser'
import { httpClient } from 'sluice/client'

declare const wallet: Eip1193Provider
declare const deployment: Deployment
const options: StartNodeOptions = {
  deployment,
  provider: wallet,
  key: '0x01',
  relay: ['/ip4/127.0.0.1/tcp/9090/ws/p2p/relay'],
  confirmations: 0,
  monitoringReward: 1n,
  logLevel: 'info',
  backup: { timeoutMs: 1_000 },
}
export const node = await startNode(options)
export const address: \`0x\${string}\` = (await node.address()).our_address
importState(await node.exportState())
export async function balance(): Promise<string | undefined> {
  try {
    return (await httpClient('http://127.0.0.1:5001', { token: 'secret' }).channel('0x1', '0x2')).balance
  } catch (e) {
    if (e instanceof NodeApiError && e.code === 'NOT_FOUND' && e.status === 404) return undefined
    throw e
  }
}
`

/** Each of these lines is wrong, and tsc must say so there. */
export const CONSUMER_WRONG = `import { importState, startNode } from 'sluice/browser'
await startNode({ rpc: 1 })
import { httpClient } from 'sluice/client'
await httpClient('http://127.0.0.1:5001').pay('0x1', '0x2', { amount: true })
await startNode({ deployment: '/deployments/31337.json', key: 'abc' })
importState({ format: 'sluice-dump' })
`
export const CONSUMER_WRONG_LINES = [2, 4, 5, 6]

/** sluice/react's hooks misused: an address that is a number, a status that is a string. */
export const REACT_WRONG = `import { useChannels, useNodeStatus } from 'sluice/react'
export const channels = () => useChannels(42)
export const status = (): number | undefined => useNodeStatus().data?.status
`
export const REACT_WRONG_LINES = [2, 3]

/** The .d.ts files in an installed package, relative to it. */
export function declarationFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && /\.d\.[cm]?ts$/.test(entry.name))
    .map((entry) => relative(dir, `${entry.parentPath}/${entry.name}`))
    .sort()
}

/** The packages a declaration file imports (`from '...'`, `import('...')`), its comments left out. */
export function packagesImported(text: string): string[] {
  const code = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '')
  const specifiers = [...code.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*)['"]([^'"]+)['"]/g)].map((m) => m[1]!)
  return [...new Set(specifiers.filter((s) => !s.startsWith('.') && !s.startsWith('/')))].sort()
}
