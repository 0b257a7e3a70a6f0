// Local routing improved by the announcements a node hears (docs/decisions/0074), between real processes, with no
// pathfinding service at all: a relay and six `sluice serve` nodes A to F in `--routing-mode local` on an anvil of this
// file's own. Two ways from A to F: A-B-F, short, and A-C-D-E-F, long. B pays F all it had in their channel. By
// deposits alone A would take A-B-F and get its lock back from B; having heard B's and F's announcements (F's passed
// on three hops by E, D and C), A's first route is the long one, and it pays; restarted, it hears it all again.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Address, Hex } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { anvilKeys } from '../../src/devnet/anvil.ts'
import { writeDeployment } from '../../src/devnet/deploymentFile.ts'
import { startRelay, type Relay } from '../../src/transport/libp2p/relay.ts'
import { call } from '../cli/devnetProcess.ts'
import { logged, quickServeFlags, startSluice, stopSluice, type SluiceProcess } from '../cli/sluiceProcess.ts'
import { startDevnet, type Devnet } from './support/devnet.ts'
import { eventually } from './support/eventually.ts'

type Name = 'A' | 'B' | 'C' | 'D' | 'E' | 'F'
const names: Name[] = ['A', 'B', 'C', 'D', 'E', 'F']
const keys = Object.fromEntries(names.map((n, i) => [n, anvilKeys[i + 1] as Hex])) as Record<Name, Hex>
const at = Object.fromEntries(names.map((n) => [n, privateKeyToAddress(keys[n])])) as Record<Name, Address>
const DEPOSIT = 1000n
/** Each opener's channel, its deposit on the opener's side: A-B-F and A-C-D-E-F. */
const channels: [Name, Name][] = [
  ['A', 'B'],
  ['B', 'F'],
  ['A', 'C'],
  ['C', 'D'],
  ['D', 'E'],
  ['E', 'F'],
]
/** Every participant's capacity and fee update of every channel. */
const ALL_UPDATES = channels.length * 2 * 2

const dirs: string[] = []
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-local-routing-'))
  dirs.push(dir)
  return dir
}

let net: Devnet
let relay: Relay
let deploymentFile: string
const nodes = {} as Record<Name, { sluice: SluiceProcess; api: string; dataDir: string }>

async function serve(name: Name) {
  const dataDir = nodes[name]?.dataDir ?? tempDir()
  const sluice = startSluice(
    [
      'serve',
      '--rpc',
      net.anvil.rpcUrl,
      '--deployment',
      deploymentFile,
      '--key',
      keys[name],
      '--data-dir',
      dataDir,
      '--relay',
      relay.multiaddrs[0]!,
      '--routing-mode',
      'local',
      ...quickServeFlags,
    ],
    tempDir(),
  )
  const [, api] = await sluice.waitForOutput(/REST API: (\S+)\n/, 60_000)
  nodes[name] = { sluice, api: api!, dataDir }
  await eventually(async () => expect((await call('GET', `${api}/status`)).body).toEqual({ status: 'ready' }), 60_000)
}

const api = (name: Name) => nodes[name].api
const heard = async (name: Name) => (await call('GET', `${api(name)}/settings`)).body.pathfinding.heard
const pay = (from: Name, to: Name, amount: bigint, identifier: number) =>
  call('POST', `${api(from)}/payments/${net.token}/${at[to]}`, { amount: String(amount), identifier: String(identifier) })

beforeAll(async () => {
  ;[net, relay] = await Promise.all([startDevnet(names.map((n) => keys[n])), startRelay({ listen: ['/ip4/127.0.0.1/tcp/0/ws'] })])
  deploymentFile = join(tempDir(), 'deployment.json')
  await writeDeployment(deploymentFile, net.deployment)
  await Promise.all(names.map((name) => serve(name)))
  // One node opens one channel at a time (its transactions are one queue).
  const openers = [...new Set(channels.map(([from]) => from))]
  await Promise.all(
    openers.map(async (opener) => {
      for (const [from, to] of channels.filter(([f]) => f === opener)) {
        const opened = await call('PUT', `${api(from)}/channels`, { partner_address: at[to], token_address: net.token, total_deposit: String(DEPOSIT) })
        expect(opened.status, JSON.stringify(opened.body)).toBe(201)
      }
    }),
  )
  for (const name of names)
    await eventually(
      async () => expect((await call('GET', `${api(name)}/tokens/${net.token}/network`)).body.channels, name).toHaveLength(channels.length),
      30_000,
    )
}, 240_000)

afterAll(async () => {
  await Promise.all(Object.values(nodes).map((n) => stopSluice(n.sluice)))
  await relay?.stop()
  await net?.stop()
  dirs.forEach((d) => rmSync(d, { recursive: true, force: true }))
})

describe('routing by the announcements a node hears, without a pathfinding service', () => {
  test("every node hears every channel's announcements, passed on hop by hop from nodes it has no channel with", async () => {
    // A has channels with B and C only: D's and E's announcements of D-E reach it through C, two hops on.
    for (const name of names) await eventually(async () => expect((await heard(name)).held, name).toBe(ALL_UPDATES), 20_000)
    expect((await heard('A')).refused).toBe(0)
  }, 30_000)

  test("B drains its way to F: A's first route is A-C-D-E-F, and it pays", async () => {
    // What A hears has settled first: a late announcement of the setup (a partner's deposit, say) arriving after the
    // drain would pass for the drain's, and A route through B before it knows.
    await eventually(async () => {
      const first = (await heard('A')).accepted
      await new Promise((r) => setTimeout(r, 2_000))
      expect((await heard('A')).accepted).toBe(first)
    }, 20_000)
    const before = (await heard('A')).accepted
    const drained = await pay('B', 'F', DEPOSIT, 1)
    expect(drained.status, JSON.stringify(drained.body)).toBe(200)
    // A hears that B can send F nothing now (from B itself, and from F through E, D and C).
    await eventually(async () => expect((await heard('A')).accepted).toBeGreaterThan(before), 10_000)

    const paid = await pay('A', 'F', 100n, 2)
    expect(paid.status, JSON.stringify(paid.body)).toBe(200)
    expect(paid.body.route).toEqual([at.C, at.D, at.E, at.F])
    // The first route was that one: no route was given up.
    expect(nodes.A.sluice.stdout()).not.toMatch(logged('payment route failed'))
  }, 60_000)

  test('what a node heard is not kept: restarted, A hears it all again from its partners, who answer its own announcements', async () => {
    await stopSluice(nodes.A.sluice)
    await serve('A')
    await eventually(async () => expect((await heard('A')).held).toBe(ALL_UPDATES), 20_000)
    // B's drained way to F is known again: A's first route is still the long one.
    const paid = await pay('A', 'F', 100n, 3)
    expect(paid.status, JSON.stringify(paid.body)).toBe(200)
    expect(paid.body.route).toEqual([at.C, at.D, at.E, at.F])
    expect(nodes.A.sluice.stdout()).not.toMatch(logged('payment route failed'))
  }, 90_000)
})
