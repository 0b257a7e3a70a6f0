// The vitest hooks the contract test files share: one anvil with the contracts deployed per file, and an anvil
// snapshot around every test so tests never see each other's transactions. Kept apart from tokenNetwork.ts,
// which has no vitest imports because bench/ reuses it under tsx.
import type { Hex } from 'viem'
import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest'
import { openFundedChannel, startChain, type ChainFixture, type DeployOptions, type Party } from './tokenNetwork.ts'
import type { AnvilClient } from './clients.ts'

/** anvil keys 1..9 (`ChainFixture.parties`), typed so `[A, B, C] = parties` needs no cast. */
export type Parties = readonly [Party, Party, Party, Party, Party, Party, Party, Party, Party]

export type ChainSuite = { fx: ChainFixture; parties: Parties }

export type ChainSuiteOptions = {
  /** Passed to `startChain` (deposit limits, token network limit). */
  deploy?: DeployOptions
  /** Snapshot anvil before each test and revert to it after (default true). */
  isolate?: boolean
  /** Before each test (after the snapshot), open a channel between parties[0] and parties[1] with these deposits. */
  channel?: readonly [depositA: bigint, depositB: bigint]
}

/**
 * Registers a snapshot before each test and a revert to it after, on the client `client()` returns when the
 * hooks run. Hooks registered later in the file run after the snapshot, so what they set up is undone too.
 */
export function snapshotEach(client: () => AnvilClient): void {
  let snapshot: Hex
  beforeEach(async () => {
    snapshot = await client().snapshot()
  })
  afterEach(async () => {
    await client().revert({ id: snapshot })
  })
}

/**
 * Starts a chain for the file (stopped after it), isolates its tests with snapshots and, with `channel`, opens
 * a fresh funded channel for each test. `bind` is called whenever the suite changes (once started, and after
 * each new channel) so a file can keep its module-level variables:
 * `useChain({ channel: [100n, 50n] }, (t) => ({ fx, channel, parties: [A, B, C] } = t))`.
 */
export function useChain(
  options: ChainSuiteOptions & { channel: readonly [bigint, bigint] },
  bind: (t: ChainSuite & { channel: bigint }) => unknown,
): ChainSuite & { channel: bigint }
export function useChain(options: ChainSuiteOptions, bind: (t: ChainSuite) => unknown): ChainSuite
export function useChain(bind: (t: ChainSuite) => unknown): ChainSuite
export function useChain(
  optionsOrBind: ChainSuiteOptions | ((t: ChainSuite) => unknown),
  bindOrNothing?: (t: ChainSuite & { channel: bigint }) => unknown,
): ChainSuite & { channel: bigint } {
  const [options, bind]: [ChainSuiteOptions, (t: ChainSuite & { channel: bigint }) => unknown] =
    typeof optionsOrBind === 'function' ? [{}, optionsOrBind] : [optionsOrBind, bindOrNothing!]
  const t = {} as ChainSuite & { channel: bigint }
  beforeAll(async () => {
    t.fx = await startChain(options.deploy)
    t.parties = t.fx.parties as unknown as Parties
    bind(t)
  })
  afterAll(() => t.fx.stop())
  if (options.isolate ?? true) snapshotEach(() => t.fx.controller.client)
  const deposits = options.channel
  if (deposits) {
    beforeEach(async () => {
      t.channel = await openFundedChannel(t.fx, t.parties[0], t.parties[1], deposits[0], deposits[1])
      bind(t)
    })
  }
  return t
}
