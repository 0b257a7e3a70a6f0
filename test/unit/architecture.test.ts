import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative, resolve } from 'node:path'
import { describe, expect, test } from 'vitest'
import { commandSummaries } from '../../src/cli/commandList.ts'
import type { NodeClient } from '../../src/node/actions/client.ts'
import { createServices } from '../../src/node/services/nodeServices.ts'
import { importEdges, modulesUnder, type ImportEdge } from '../support/importGraph.ts'

// The rules of docs/architecture.md that a test can keep, and the document's own claims about the code (the paths it
// names, the services, the commands). Each test reads the code as it is: a rule broken, or the page left behind, fails.

const root = resolve(import.meta.dirname, '../..')
const doc = readFileSync(resolve(root, 'docs/architecture.md'), 'utf8')
const path = (file: string) => relative(root, file)
const edges = importEdges([resolve(root, 'src'), resolve(root, 'worker')])

/** The folders the Layers table names (its first column), most specific first: the layer a module is in. */
const layers = [
  'src/pathfinding/service/',
  'src/backup/server/',
  ...[
    'protocol',
    'crypto',
    'chain',
    'storage',
    'transport',
    'node',
    'api',
    'host',
    'log',
    'backup',
    'monitor',
    'pathfinding',
    'metrics',
    'cli',
    'headless',
    'devnet',
    'contracts',
  ].map((folder) => `src/${folder}/`),
  'src/errors.ts',
  'src/waits.ts',
  'src/serialByKey.ts',
  'src/version.ts',
  'worker/',
]
const layerOf = (file: string) => layers.find((layer) => path(file).startsWith(layer))

/**
 * What each layer may import: the Layers table's last column, as layers (`src/chain/`) or parts of one (a folder or a
 * module: `src/node/actions/`, `src/monitor/limits.ts`); `type ` before one allows only `import type`. A layer not
 * listed here may import anything (`src/cli/`). Change this table and the document's together.
 */
const mayUse: Record<string, string[]> = {
  'src/protocol/': ['src/errors.ts'],
  'src/crypto/': ['src/protocol/'],
  'src/chain/': ['src/protocol/', 'src/contracts/', 'type src/storage/', 'src/errors.ts', 'src/waits.ts', 'src/serialByKey.ts'],
  'src/storage/': ['type src/protocol/', 'type src/chain/', 'src/errors.ts'],
  'src/transport/': ['src/protocol/', 'type src/storage/', 'src/errors.ts', 'src/serialByKey.ts'],
  'src/node/': [
    'src/protocol/',
    'src/crypto/',
    'src/chain/',
    'src/storage/',
    'src/transport/',
    'src/contracts/',
    'src/pathfinding/',
    'src/monitor/limits.ts',
    'src/backup/',
    'src/errors.ts',
    'src/waits.ts',
    'src/serialByKey.ts',
  ],
  'src/api/': [
    'src/node/actions/',
    'src/node/services/',
    'src/node/notices.ts',
    'src/node/errors.ts',
    'type src/node/sluiceNode.ts',
    'src/protocol/',
    'src/chain/transactionRisk.ts',
    'src/storage/json.ts',
    'type src/storage/storage.ts',
    'src/errors.ts',
  ],
  'src/host/': ['type src/node/', 'src/api/'],
  'src/log/': ['type src/node/notices.ts', 'src/chain/transactionRisk.ts', 'src/errors.ts'],
  'src/backup/': ['src/protocol/', 'src/errors.ts', 'src/version.ts'],
  'src/backup/server/': ['src/backup/', 'src/protocol/', 'src/api/errors.ts', 'src/api/input.ts', 'src/storage/postgres/', 'src/errors.ts', 'src/version.ts'],
  'src/monitor/': [
    'src/protocol/',
    'src/chain/',
    'src/contracts/',
    'src/transport/',
    'src/storage/',
    'src/api/access.ts',
    'src/api/errors.ts',
    'src/errors.ts',
    'src/version.ts',
  ],
  'src/pathfinding/': ['src/protocol/', 'src/errors.ts'],
  'src/pathfinding/service/': [
    'src/pathfinding/',
    'src/protocol/',
    'src/chain/',
    'src/contracts/',
    'src/transport/',
    'src/storage/',
    'src/api/json.ts',
    'src/monitor/',
    'src/errors.ts',
    'src/version.ts',
  ],
  'src/metrics/': [
    'src/node/',
    'src/chain/',
    'src/monitor/',
    'src/pathfinding/service/',
    'src/transport/',
    'src/backup/server/',
    'type src/protocol/',
    'src/cli/httpServer.ts',
    'src/version.ts',
  ],
  'src/headless/': [
    'src/node/',
    'src/host/',
    'src/api/',
    'src/chain/',
    'src/storage/',
    'src/transport/',
    'src/log/',
    'src/devnet/deploymentFile.ts',
    'src/cli/',
    'worker/',
    'src/errors.ts',
    'src/version.ts',
  ],
  'src/devnet/': [
    'src/chain/',
    'src/contracts/',
    'src/node/',
    'src/storage/',
    'src/transport/',
    'src/monitor/',
    'src/pathfinding/',
    'src/pathfinding/service/',
    'src/cli/',
    'src/log/',
    'src/errors.ts',
    'src/version.ts',
  ],
  'src/contracts/': [],
  'src/errors.ts': [],
  'src/waits.ts': [],
  'src/serialByKey.ts': [],
  'worker/': [
    'src/host/',
    'src/node/',
    'src/api/',
    'src/chain/',
    'src/storage/',
    'src/transport/',
    'src/log/',
    'src/errors.ts',
    'src/waits.ts',
    'src/version.ts',
  ],
}

function allowed(edge: ImportEdge & { to: string }, rules: string[]): boolean {
  const target = path(edge.to)
  return rules.some((rule) => {
    const typesOnly = rule.startsWith('type ')
    const part = typesOnly ? rule.slice('type '.length) : rule
    if (typesOnly && !edge.typeOnly) return false
    // A layer allows itself only (`src/pathfinding/` not its service); a part of one, what is under it.
    return layers.includes(part) ? layerOf(edge.to) === part : target.startsWith(part)
  })
}

const between = (edge: ImportEdge & { to: string }) => `${path(edge.from)} -> ${path(edge.to)}${edge.typeOnly ? ' (type)' : ''}`
const relativeEdges = edges.filter((e): e is ImportEdge & { to: string } => e.to !== undefined)

describe('the import reader the rules stand on (test/support/importGraph.ts)', () => {
  test('reads each kind of import, and whether it is for types only, one statement at a time', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-imports-'))
    try {
      // A type alias before an import: the import is not taken for a type-only one.
      const source = [
        'export type A = number',
        "import { b } from './b.ts'",
        "import type {\n  C,\n} from './c.ts'",
        "import D, { type E } from 'd'",
        "export * from './f.ts'",
        "export type { G } from './g.ts'",
        "import './h.ts'",
        "export const i = () => import('./i.ts')",
        "export const j = 'from ./k.ts'",
      ].join('\n')
      writeFileSync(join(dir, 'a.ts'), source)
      const read = importEdges([dir]).map((e) => `${e.typeOnly ? 'type ' : ''}${e.to === undefined ? e.spec : relative(dir, e.to)}`)
      expect(read.sort()).toEqual(['b.ts', 'd', 'f.ts', 'h.ts', 'i.ts', 'type c.ts', 'type g.ts'])
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe('rule 1: imports point down', () => {
  test('each layer imports only what the Layers table says it may use', () => {
    expect(relativeEdges.length).toBeGreaterThan(1000)
    const refused = relativeEdges.filter((edge) => {
      const from = layerOf(edge.from)
      const to = layerOf(edge.to)
      if (from === undefined || to === undefined || from === to) return false
      const rules = mayUse[from]
      return rules !== undefined && !allowed(edge, rules)
    })
    expect(refused.map(between)).toEqual([])
  })

  test('every module of src/ and worker/ is in a layer of the table', () => {
    const files = [...modulesUnder(resolve(root, 'src')), ...modulesUnder(resolve(root, 'worker'))]
    expect(files.filter((file) => layerOf(file) === undefined).map(path)).toEqual([])
  })

  test('inside src/node/: createNode.ts > sluiceNode.ts > services/ > actions/ > runtime/ > nodeConfig.ts, notices.ts, errors.ts', () => {
    const order = ['createNode.ts', 'sluiceNode.ts', 'services/', 'actions/', 'runtime/', 'nodeConfig.ts|notices.ts|errors.ts']
    const rank = (file: string) => {
      const inNode = path(file).slice('src/node/'.length)
      return order.findIndex((level) => level.split('|').some((part) => (part.endsWith('/') ? inNode.startsWith(part) : inNode === part)))
    }
    const inNode = relativeEdges.filter((e) => layerOf(e.from) === 'src/node/' && layerOf(e.to) === 'src/node/')
    expect(inNode.length).toBeGreaterThan(100)
    const upward = inNode.filter((e) => rank(e.from) > rank(e.to))
    expect(upward.map(between)).toEqual([])
    // Every module of src/node/ is at one of the levels.
    expect(
      modulesUnder(resolve(root, 'src/node'))
        .filter((file) => rank(file) === -1)
        .map(path),
    ).toEqual([])
  })
})

describe('rule 2: the core is pure', () => {
  const protocolEdges = edges.filter((e) => layerOf(e.from) === 'src/protocol/')

  test("src/protocol/ loads only viem and the hash, cipher and curve libraries among the packages, nothing of Node's", () => {
    const packages = new Set(protocolEdges.flatMap((e) => (e.spec === undefined ? [] : [e.spec])))
    expect(packages.size).toBeGreaterThan(1)
    const pure = (spec: string) => ['viem', 'hash-wasm'].includes(spec) || spec.startsWith('@noble/')
    expect([...packages].filter((spec) => !pure(spec))).toEqual([])
  })

  test("src/protocol/ takes none of viem's clients or transports (they talk to a chain)", () => {
    const taken = modulesUnder(resolve(root, 'src/protocol')).flatMap((file) =>
      [...readFileSync(file, 'utf8').matchAll(/import\s+(?:type\s+)?\{([^}]*)\}\s+from\s+'viem(?:\/[^']*)?'/g)].flatMap((m) =>
        m[1]!
          .split(',')
          .map((name) => name.trim().replace(/^type\s+/, ''))
          .filter((name) => /^(create\w*Client|http|webSocket|fallback|custom)$/.test(name))
          .map((name) => `${path(file)}: ${name}`),
      ),
    )
    expect(taken).toEqual([])
  })

  test('src/protocol/ reads no clock, draws no randomness, waits for nothing and calls nothing outside', () => {
    const forbidden =
      /\bDate\.now\b|\bnew Date\b|\bperformance\.now\b|\bMath\.random\b|\bgetRandomValues\b|\brandomBytes\b|\bsetTimeout\b|\bsetInterval\b|\bfetch\(|\bprocess\.|\bglobalThis\b/g
    const modules = modulesUnder(resolve(root, 'src/protocol'))
    expect(modules.length).toBeGreaterThan(40)
    const found = modules.flatMap((file) => {
      // Comments may name what the core does not do.
      const code = readFileSync(file, 'utf8')
        .replace(/\/\*[\s\S]*?\*\//g, '')
        .replace(/(^|[^:'"`])\/\/.*$/gm, '$1')
      return [...code.matchAll(forbidden)].map((m) => `${path(file)}: ${m[0]}`)
    })
    expect(found).toEqual([])
  })
})

describe('rule 5: ports, not engines', () => {
  test('src/node/ reaches no storage or transport adapter and none of their packages: only the ports', () => {
    const adapters = [
      /^src\/storage\/(idbStorage|levelStorage|memoryStorage|pgStorage|serviceLevelStore|serviceStore)\.ts$/,
      /^src\/storage\/postgres\//,
      /^src\/transport\/(broadcastChannelTransport|lazyTransport)\.ts$/,
      /^src\/transport\/libp2p\//,
    ]
    const engines = /^(idb|classic-level|pg|fake-indexeddb|libp2p|@libp2p\/|@chainsafe\/|ws$)/
    const fromNode = edges.filter((e) => layerOf(e.from) === 'src/node/')
    expect(
      fromNode.filter((e) => e.to !== undefined && adapters.some((a) => a.test(path(e.to!)))).map((e) => between(e as ImportEdge & { to: string })),
    ).toEqual([])
    expect(fromNode.filter((e) => e.spec !== undefined && engines.test(e.spec)).map((e) => `${path(e.from)}: ${e.spec}`)).toEqual([])
  })
})

/** Every class of src/ and worker/ that extends SluiceError, however far down. */
function sluiceErrorClasses(): Set<string> {
  const parent = new Map<string, string>()
  for (const file of [...modulesUnder(resolve(root, 'src')), ...modulesUnder(resolve(root, 'worker'))]) {
    for (const m of readFileSync(file, 'utf8').matchAll(/\bclass\s+(\w+)(?:<[^>]*>)?\s+extends\s+(\w+)/g)) parent.set(m[1]!, m[2]!)
  }
  const ours = (name: string) => {
    for (let c: string | undefined = name, depth = 0; c !== undefined && depth < 20; c = parent.get(c), depth++) if (c === 'SluiceError') return true
    return false
  }
  return new Set([...parent.keys()].filter(ours))
}

describe('rule 6: decided by code, never by class', () => {
  /** Where an `instanceof` of one of our error classes is allowed, and why (the rule's exceptions, in the document). */
  const exceptions: Record<string, (file: string) => boolean> = {
    // Is it one of ours at all, with a code: no code can say that.
    SluiceError: () => true,
    // The answers the HTTP servers render: a status and headers that no code gives (any status may carry any code).
    ApiError: (file) => ['src/api/errors.ts', 'src/cli/standby.ts', 'src/monitor/api.ts', 'src/backup/server/app.ts'].includes(file),
    PfsAnswerError: (file) => file === 'src/pathfinding/service/api.ts',
    // The command line's own errors: a kind, each with the exit code it ends the process with, not one code.
    CliError: (file) => file.startsWith('src/cli/'),
    UsageError: (file) => file.startsWith('src/cli/'),
    // The storage layer's wrapper: its own errors pass through, anything else (an engine's) becomes a StorageError.
    StorageError: (file) => file === 'src/storage/asStorageError.ts',
  }

  test('no `instanceof` of a SluiceError class outside the exceptions the document names', () => {
    const ours = sluiceErrorClasses()
    expect(ours.size).toBeGreaterThan(80)
    expect([...ours]).toEqual(expect.arrayContaining(['ChainRpcError', 'StorageError', 'ApiError', 'BrowserUnsupportedError']))
    const found = [...modulesUnder(resolve(root, 'src')), ...modulesUnder(resolve(root, 'worker'))].flatMap((file) =>
      readFileSync(file, 'utf8')
        .split('\n')
        .flatMap((line, i) =>
          [...line.matchAll(/\binstanceof\s+(\w+)/g)]
            .filter((m) => ours.has(m[1]!) && !exceptions[m[1]!]?.(path(file)))
            .map((m) => `${path(file)}:${i + 1}: instanceof ${m[1]}`),
        ),
    )
    expect(found).toEqual([])
  })

  test('the document names the same exceptions', () => {
    const rule = /^6\. \*\*Behaviour is decided by error codes[\s\S]*?(?=\n\n)/m.exec(doc)?.[0]
    expect(rule).toBeDefined()
    for (const name of Object.keys(exceptions)) expect(rule).toContain(`\`${name}\``)
  })
})

describe('what the document says of the code', () => {
  test('every file and folder it names under src/, worker/ and test/ exists', () => {
    const named = [...new Set([...doc.matchAll(/`((?:src|worker|test)\/[^`\s]*)`/g)].map((m) => m[1]!))]
    // Patterns (`src/api/routes/<resource>.ts`) name no one file.
    const paths = named.filter((p) => !/[<*]/.test(p))
    expect(paths.length).toBeGreaterThan(80)
    expect(paths.filter((p) => !existsSync(resolve(root, p)))).toEqual([])
  })

  test('the services it lists, in their order, are the ones createServices makes and the node starts', () => {
    // The client as far as the services' constructors look at it: each is made, none started.
    const client = { config: { enableMonitoring: true, backupUrl: 'http://backup.invalid', backup: {}, notifications: {} }, subscribe: () => () => {} }
    const services = Object.keys(createServices(client as unknown as NodeClient))
    expect(services.length).toBeGreaterThan(4)
    // Each item of the list begins with its key: `partnerLinks`, ...; `connections`, ...; and `backup`, ...
    const listed = /started in this order:\s+([^.]*)\./.exec(doc)?.[1]
    expect(listed).toBeDefined()
    expect([...listed!.matchAll(/(?:^|;\s+(?:and\s+)?)`(\w+)`/g)].map((m) => m[1])).toEqual(services)
  })

  test('the commands it names are the ones `sluice` has', () => {
    const commands = Object.keys(commandSummaries)
    const cliRow = /^\| `src\/cli\/` \| \*\*The `sluice` command\*\*: ([^.]*)\./m.exec(doc)?.[1]
    const interfaces = /command `sluice` with ([^(]*) \(\[cli.md\]/.exec(doc)?.[1]
    const names = (text: string | undefined) => [...(text ?? '').matchAll(/`([a-z-]+)`/g)].map((m) => m[1])
    expect(names(cliRow)).toEqual(commands)
    expect(names(interfaces)).toEqual(commands)
  })
})
