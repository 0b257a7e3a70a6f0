import { MAX_PATHFINDING_MAX_PATHS, ROUTING_MODES, type FlagSettings, type RoutingMode } from '../node/nodeConfig.ts'
import { integerFlag, type FlagSpec } from './args.ts'

function httpUrlOrAuto(raw: string): string | undefined {
  if (raw === 'auto') return raw
  try {
    const url = new URL(raw)
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname ? raw : undefined
  } catch {
    return undefined
  }
}

/** How a node finds its routes, with Raiden's flags and names (docs/decisions/0073); `--pathfinding-max-fee` is with the fees. */
export const routingFlags = {
  routingMode: {
    description:
      'how routes are found: local (over the channels the node follows, by what their participants announced to their partners, else by deposits; its channels are announced to its partners, and to --pathfinding-service-address if given), pfs (ask the pathfinding service, pay it, route locally while it does not answer), private (announce nothing, pass nothing on, route locally with what it hears)',
    valueName: 'MODE',
    expected: ROUTING_MODES.join(', '),
    parse: (raw: string) => ((ROUTING_MODES as readonly string[]).includes(raw) ? (raw as RoutingMode) : undefined),
    default: 'local',
  } as FlagSpec<RoutingMode, true>,
  pathfindingServiceAddress: {
    description:
      'the pathfinding service: its URL, or auto for one registered in the ServiceRegistry whose price is within --pathfinding-max-fee (default: auto with --routing-mode pfs, none otherwise)',
    valueName: 'URL',
    expected: 'an http(s) URL or auto',
    parse: httpUrlOrAuto,
    default: undefined,
  } as FlagSpec<string, false>,
  pathfindingMaxPaths: integerFlag({
    description: 'how many routes to ask the pathfinding service for',
    valueName: 'N',
    min: 1,
    max: MAX_PATHFINDING_MAX_PATHS,
    default: 3,
  }),
  pathfindingIouTimeout: integerFlag({
    description: "blocks until a new IOU session with the pathfinding service expires (a service takes none shorter than 40320, a week's)",
    valueName: 'BLOCKS',
    min: 1,
    max: 1_000_000_000,
    default: 200_000,
  }),
}

/** The node's routing settings from the flags. */
export function routingSettingsOf(flags: {
  routingMode: RoutingMode
  pathfindingServiceAddress: string | undefined
  pathfindingMaxPaths: number
  pathfindingIouTimeout: number
}): Pick<FlagSettings, 'routingMode' | 'pathfindingServiceAddress' | 'pathfindingMaxPaths' | 'pathfindingIouTimeout'> {
  return {
    routingMode: flags.routingMode,
    ...(flags.pathfindingServiceAddress !== undefined ? { pathfindingServiceAddress: flags.pathfindingServiceAddress } : {}),
    pathfindingMaxPaths: flags.pathfindingMaxPaths,
    pathfindingIouTimeout: flags.pathfindingIouTimeout,
  }
}
