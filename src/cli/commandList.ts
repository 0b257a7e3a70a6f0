/**
 * Every `sluice` subcommand with its one-line summary, and nothing else: the light `sluice` package's bin names
 * them (to point at @sluice/node) without loading any of them (docs/decisions/0042-two-packages-sluice-and-sluice-node.md).
 */
export const commandSummaries = {
  chain: 'start a local anvil chain with the contracts deployed',
  deploy: 'deploy the contracts on any chain (a testnet, mainnet), resumably, and write the deployment file',
  serve: 'run one node and serve its REST API over HTTP',
  devnet: 'anvil, contracts, tokens and N funded nodes with their REST APIs, in one process',
  monitor: "run a monitoring service that guards nodes' channels while they are offline",
  pathfinding: "run a pathfinding service that answers routes (Raiden's PFS API) from what nodes announce",
  relay: 'run a libp2p relay (circuit relay and presence hub) for nodes to meet',
  'backup-server': "keep nodes' sealed backup copies off the browser (newest per address)",
  init: "copy the service worker and the node's worker into the folder a dApp serves",
} as const

export type CommandName = keyof typeof commandSummaries

export function isCommandName(name: string): name is CommandName {
  return Object.hasOwn(commandSummaries, name)
}

/** `sluice --help`: the commands given, each with its summary, then `after` if any. */
export function usageOf(names: readonly CommandName[], after = ''): string {
  const width = Math.max(...names.map((n) => n.length)) + 2
  return `Usage: sluice <command> [flags]

Commands:
${names.map((name) => `  ${name.padEnd(width)}${commandSummaries[name]}`).join('\n')}
${after}
Run \`sluice <command> --help\` for the flags of a command, \`sluice --version\` for the version.`
}
