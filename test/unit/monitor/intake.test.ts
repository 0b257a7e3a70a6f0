import fc from 'fast-check'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { bytesToHex, createPublicClient, getAddress, hexToBytes, http, type Address, type Hex } from 'viem'
import { generatePrivateKey } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest'
import { createChainClient } from '../../../src/chain/chainClient.ts'
import { mintTokens } from '../../../src/chain/erc20.ts'
import { openChannel } from '../../../src/chain/tokenNetworkActions.ts'
import { sendProtocolTransaction } from '../../../src/chain/transactions.ts'
import { depositToUserDeposit } from '../../../src/chain/userDepositActions.ts'
import { ZERO_HASH } from '../../../src/protocol/balanceProof.ts'
import { encodeMessage } from '../../../src/protocol/messages/wire.ts'
import type { Delivered, RequestMonitoring, Signed } from '../../../src/protocol/messages/types.ts'
import { requestMonitoringAckId } from '../../../src/protocol/monitoringRequest.ts'
import { signMessage } from '../../../src/protocol/messages/sign.ts'
import { packMessage } from '../../../src/protocol/messages/pack.ts'
import { signPackedSync } from '../../../src/protocol/signature.ts'
import { createChainFacts } from '../../../src/monitor/chainFacts.ts'
import { Intake, type IntakeOutcome } from '../../../src/monitor/intake.ts'
import { defaultLimits, type Limits } from '../../../src/monitor/limits.ts'
import { channelKey } from '../../../src/monitor/records.ts'
import { MonitorStore } from '../../../src/monitor/store.ts'
import { freshAccount, ownTokenNetwork, type FreshAccount } from '../../support/sharedChain.ts'
import { line, monitoringRequest, partnerProof, type ProofOf } from '../../support/monitoring.ts'
import { jsSecp256k1 } from '../../../src/protocol/secp256k1.ts'

/**
 * The intake of requests, field by field, on the run's anvil: real channels of fresh accounts, requests signed with
 * their keys, the store on disk, the chain read by the service's own client. What a user of the service notices: a
 * request acknowledged (the Delivered sent back) and held, or refused with its reason counted and nothing held.
 */

const rpcUrl = inject('rpcUrl')
const deployment = inject('deployment')
const monitoringService = deployment.contracts.MonitoringService.address
const chainId = BigInt(deployment.chainId)
const REWARD = 10n
const DEPOSIT = 100n

let partner: FreshAccount // P: signs the balance proofs, the one who might close
let requester: FreshAccount // N: asks the service to guard its channel with P
let third: FreshAccount // Q: another partner of N's
let closer: FreshAccount // R: N's partner in a closed channel
let service: FreshAccount
let tokenNetwork: Address
let open: ProofOf
let withThird: ProofOf
let closed: ProofOf
const dirs: string[] = []

beforeAll(async () => {
  ;[partner, requester, third, closer, service] = (await Promise.all([0, 1, 2, 3, 4].map(() => freshAccount(rpcUrl)))) as [
    FreshAccount,
    FreshAccount,
    FreshAccount,
    FreshAccount,
    FreshAccount,
  ]
  ;({ tokenNetwork } = await ownTokenNetwork(partner, deployment))
  const channelOf = async (a: FreshAccount) =>
    ({
      tokenNetwork,
      chainId,
      channelId: (await openChannel(a.chain, a.queue, { tokenNetwork, partner: requester.address, settleTimeout: 40n })).channelId,
    }) as ProofOf
  ;[open, withThird, closed] = await Promise.all([channelOf(partner), channelOf(third), channelOf(closer)])
  await sendProtocolTransaction(
    { type: 'close', tokenNetwork, channelId: closed.channelId, partner: requester.address, balanceProof: null },
    { signer: closer.chain, secretRegistry: deployment.contracts.SecretRegistry.address, queue: closer.queue },
  )
  await mintTokens(requester.chain, requester.queue, { token: deployment.serviceToken, amount: DEPOSIT })
  await depositToUserDeposit(requester.chain, requester.queue, { userDeposit: deployment.contracts.UserDeposit.address, totalDeposit: DEPOSIT })
})
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })))

type Bench = { intake: Intake; store: MonitorStore; acks: { to: Address; delivered: Delivered }[]; dir: string }

async function intakeWith(options: { limits?: Partial<Limits>; minReward?: bigint; rpc?: string; dir?: string } = {}): Promise<Bench> {
  const dir = options.dir ?? mkdtempSync(join(tmpdir(), 'sluice-intake-'))
  dirs.push(dir)
  const chain = await createChainClient({ privateKey: service.key, transport: http(options.rpc ?? rpcUrl, { batch: true }), chainId: deployment.chainId })
  const store = await MonitorStore.open(dir, { chainId: deployment.chainId, monitoringService, address: service.address })
  const acks: Bench['acks'] = []
  const intake = new Intake({
    store,
    context: { chainId, monitoringService, curve: jsSecp256k1, minReward: options.minReward ?? 0n },
    limits: { ...defaultLimits, ...options.limits },
    facts: createChainFacts(chain, { registry: deployment.contracts.TokenNetworkRegistry.address, userDeposit: deployment.contracts.UserDeposit.address }),
    acknowledge: (to, delivered) => acks.push({ to, delivered }),
  })
  return { intake, store, acks, dir }
}

/** N's request for its channel `at` with P's (or `signer`'s) proof at `nonce`. */
function request(nonce: bigint, { at = open, signer = partner.key, reward = REWARD }: { at?: ProofOf; signer?: Hex; reward?: bigint } = {}) {
  return monitoringRequest(requester.key, partnerProof(signer, at, { nonce, transferred: nonce * 3n }), monitoringService, reward)
}

const held = (b: Bench, at: ProofOf = open) =>
  b.store.channels.get(channelKey(at.tokenNetwork, at.channelId))?.requests[requester.address.toLowerCase()]?.request
const refused = (reason: string) => expect.objectContaining({ outcome: 'refused', reason })

describe('a valid request', () => {
  test('is acknowledged with a Delivered of its derived id, sent to the requester, once it is on disk; it survives a reopen', async () => {
    const b = await intakeWith()
    const r = request(5n)
    expect(await b.intake.handle(line(r), requester.address)).toMatchObject({ outcome: 'accepted' })
    expect(b.acks).toEqual([{ to: requester.address, delivered: { type: 'Delivered', delivered_message_identifier: requestMonitoringAckId(r) } }])
    expect(held(b)).toEqual(r)
    await b.store.close()
    const reopened = await MonitorStore.open(b.dir, { chainId: deployment.chainId, monitoringService, address: service.address })
    expect(reopened.channels.get(channelKey(tokenNetwork, open.channelId))?.requests[requester.address.toLowerCase()]?.request).toEqual(r)
    await reopened.close()
  })

  test('a newer one replaces it; the same one again is acknowledged again and changes nothing; an older one or another under its nonce is stale', async () => {
    const b = await intakeWith()
    const first = request(5n)
    await b.intake.handle(line(first), requester.address)
    const newer = request(7n)
    expect(await b.intake.handle(line(newer), requester.address)).toMatchObject({ outcome: 'accepted' })
    expect(held(b)).toEqual(newer)
    expect(await b.intake.handle(line(newer), requester.address)).toMatchObject({ outcome: 'resent' })
    expect(b.acks.map((a) => a.delivered.delivered_message_identifier)).toEqual([first, newer, newer].map(requestMonitoringAckId))
    expect(await b.intake.handle(line(first), requester.address)).toEqual(refused('stale'))
    expect(await b.intake.handle(line(request(7n, { reward: REWARD + 1n })), requester.address)).toEqual(refused('stale'))
    expect(held(b)).toEqual(newer)
    expect(b.acks).toHaveLength(3)
    expect(b.intake.counters()).toEqual({ accepted: 2, resent: 1, refused: { stale: 2 } })
  })
})

describe('refused, counted, and nothing held', () => {
  /** A request as the wire carries it, with one field replaced (the signatures are then those of the original). */
  const wire = (r: Signed<RequestMonitoring>) => JSON.parse(line(r)) as Record<string, any>

  test.each([
    ['wrong_chain', () => ({ ...wire(request(5n)), balance_proof: { ...wire(request(5n)).balance_proof, chain_id: String(chainId + 1n) } })],
    [
      'wrong_service_contract',
      () => wire(monitoringRequest(requester.key, partnerProof(partner.key, open, { nonce: 5n, transferred: 1n }), tokenNetwork, REWARD)),
    ],
    ['zero_nonce', () => wire(request(0n))],
    ['zero_balance_hash', () => ({ ...wire(request(5n)), balance_proof: { ...wire(request(5n)).balance_proof, balance_hash: ZERO_HASH } })],
    // Signed by the partner, not by the requester it names.
    [
      'bad_reward_signature',
      () => {
        const r = request(5n)
        return wire({ ...r, signature: signPackedSync(jsSecp256k1, partner.key, packMessage(r)) })
      },
    ],
    ['bad_reward_signature', () => ({ ...wire(request(5n)), reward_amount: String(REWARD + 1n) })],
    ['bad_reward_signature', () => ({ ...wire(request(5n)), signature: `0x${'00'.repeat(65)}` })],
    // The requester signed the reward proof, but the counter-signature is someone else's (or another proof's).
    [
      'bad_non_closing_signature',
      () => {
        const forged = monitoringRequest(partner.key, partnerProof(partner.key, open, { nonce: 5n, transferred: 15n }), monitoringService, REWARD)
        const r = { ...request(5n), non_closing_signature: forged.non_closing_signature }
        return wire({ ...r, signature: signPackedSync(jsSecp256k1, requester.key, packMessage(r)) })
      },
    ],
    [
      'bad_non_closing_signature',
      () => {
        const r = request(5n)
        return wire({ ...r, balance_proof: { ...r.balance_proof, nonce: 6n } })
      },
    ],
    [
      'bad_balance_proof_signature',
      () =>
        wire(
          monitoringRequest(
            requester.key,
            { ...partnerProof(partner.key, open, { nonce: 5n, transferred: 1n }), signature: `0x${'00'.repeat(65)}` },
            monitoringService,
            REWARD,
          ),
        ),
    ],
    ['self_signed', () => wire(request(5n, { signer: requester.key }))],
    ['no_such_channel', () => wire(request(5n, { signer: generatePrivateKey() }))],
    ['no_such_channel', () => wire(request(5n, { at: { ...open, channelId: open.channelId + 1000n } }))],
    ['unknown_token_network', () => wire(request(5n, { at: { ...open, tokenNetwork: deployment.tokens.TTT! } }))],
    ['unknown_token_network', () => wire(request(5n, { at: { ...open, tokenNetwork: getAddress('0x000000000000000000000000000000000000dEaD') } }))],
    ['channel_not_open', () => wire(request(5n, { at: closed, signer: closer.key }))],
    ['insufficient_deposit', () => wire(request(5n, { reward: DEPOSIT + 1n }))],
  ])('%s', async (reason, make) => {
    const b = await intakeWith()
    const text = JSON.stringify(make())
    expect(await b.intake.handle(text, requester.address)).toEqual(refused(reason))
    expect(b.store.channels.size).toBe(0)
    expect(b.acks).toEqual([])
    expect(b.intake.counters()).toEqual({ accepted: 0, resent: 0, refused: { [reason]: 1 } })
  })

  test('from another peer than the requester, below the minimum reward, too long, malformed, or not a request', async () => {
    const b = await intakeWith({ minReward: REWARD + 1n })
    const r = request(5n)
    expect(await b.intake.handle(line(request(5n, { reward: REWARD + 1n })), partner.address)).toEqual(refused('not_requester'))
    expect(await b.intake.handle(line(r), requester.address)).toEqual(refused('reward_too_low'))
    expect(await b.intake.handle(`${line(r)}${' '.repeat(2048)}`, requester.address)).toEqual(refused('too_large'))
    expect(await b.intake.handle('{"type": "RequestMonitoring"', requester.address)).toEqual(refused('malformed'))
    expect(await b.intake.handle(JSON.stringify({ ...wire(r), reward_amount: '-1' }), requester.address)).toEqual(refused('malformed'))
    const processed = encodeMessage(await signMessage(jsSecp256k1, requester.key, { type: 'Processed', message_identifier: 1n }))
    expect(await b.intake.handle(processed, requester.address)).toEqual(refused('not_a_request'))
    expect(b.store.channels.size).toBe(0)
    expect(b.intake.counters().refused).toEqual({ not_requester: 1, reward_too_low: 1, too_large: 1, malformed: 2, not_a_request: 1 })
  })

  test("a peer beyond its rate is refused before anything is read; another peer's bucket is its own", async () => {
    const b = await intakeWith({ limits: { perPeerBurst: 3, perPeerPerSecond: 0.001 } })
    const outcomes: IntakeOutcome[] = []
    for (let i = 1n; i <= 5n; i++) outcomes.push(await b.intake.handle(line(request(i)), requester.address))
    expect(outcomes.map((o) => o.outcome)).toEqual(['accepted', 'accepted', 'accepted', 'refused', 'refused'])
    expect(outcomes[3]).toEqual(refused('rate_limited'))
    // The partner has its own bucket (its lines are refused for what they are, not for the requester's rate).
    expect(await b.intake.handle(line(request(9n)), partner.address)).toEqual(refused('not_requester'))
    expect(held(b)?.balance_proof.nonce).toBe(3n)
  })

  test('a requester at its number of channels gets no other one watched, and may still update those it has', async () => {
    const b = await intakeWith({ limits: { maxChannelsPerRequester: 1 } })
    expect(await b.intake.handle(line(request(5n)), requester.address)).toMatchObject({ outcome: 'accepted' })
    expect(await b.intake.handle(line(request(5n, { at: withThird, signer: third.key })), requester.address)).toEqual(refused('too_many_channels'))
    expect(await b.intake.handle(line(request(6n)), requester.address)).toMatchObject({ outcome: 'accepted' })
    expect(held(b, withThird)).toBeUndefined()
  })

  test('a chain that cannot be read: refused as chain_unavailable (the requester resends), never a crash', async () => {
    const b = await intakeWith()
    const dead = createPublicClient({ transport: http('http://127.0.0.1:9', { retryCount: 0 }) })
    const unreachable = new Intake({
      store: b.store,
      context: { chainId, monitoringService, curve: jsSecp256k1, minReward: 0n },
      limits: defaultLimits,
      facts: createChainFacts(
        { address: service.address, publicClient: dead as never },
        { registry: deployment.contracts.TokenNetworkRegistry.address, userDeposit: deployment.contracts.UserDeposit.address },
      ),
      acknowledge: () => {},
    })
    expect(await unreachable.handle(line(request(5n)), requester.address)).toEqual(refused('chain_unavailable'))
    expect(b.store.channels.size).toBe(0)
  })
})

describe('whatever a peer sends', () => {
  /** The wire form with one bit of one field flipped (numbers: one bit of their value; addresses re-checksummed). */
  function mutated(wire: Record<string, any>, field: string, bit: number): Record<string, any> {
    const out = structuredClone(wire)
    const [head, tail] = field.split('.') as [string, string | undefined]
    const holder = tail === undefined ? out : out[head]
    const key = tail ?? head
    const value = holder[key] as string
    if (/^\d+$/.test(value)) holder[key] = (BigInt(value) ^ (1n << BigInt(bit % 64))).toString()
    else {
      const bytes = hexToBytes(value as Hex)
      const at = bit % (bytes.length * 8)
      bytes[at >> 3]! ^= 1 << (at & 7)
      holder[key] = bytes.length === 20 ? getAddress(bytesToHex(bytes)) : bytesToHex(bytes)
    }
    return out
  }
  const fields = [
    'balance_proof.chain_id',
    'balance_proof.token_network_address',
    'balance_proof.channel_identifier',
    'balance_proof.nonce',
    'balance_proof.balance_hash',
    'balance_proof.additional_hash',
    'balance_proof.signature',
    'monitoring_service_contract_address',
    'non_closing_participant',
    'non_closing_signature',
    'reward_amount',
    'signature',
  ]

  test('a forged, stale or replayed request is never held: only a valid one with a higher nonce replaces what is held', async () => {
    const b = await intakeWith({ limits: { perPeerBurst: 1e9, perPeerPerSecond: 1e9 } })
    let current = request(10n)
    expect(await b.intake.handle(line(current), requester.address)).toMatchObject({ outcome: 'accepted' })
    const counts = { accepted: 1, resent: 0, refused: 0 }
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          delta: fc.integer({ min: -3, max: 3 }),
          reward: fc.bigInt({ min: 0n, max: DEPOSIT }),
          replay: fc.boolean(),
          mutation: fc.option(fc.record({ field: fc.constantFrom(...fields), bit: fc.nat() }), { freq: 2 }),
        }),
        async ({ delta, reward, replay, mutation }) => {
          const heldNonce = current.balance_proof.nonce
          const nonce = heldNonce + BigInt(delta) > 0n ? heldNonce + BigInt(delta) : 1n
          const candidate = replay ? current : request(nonce, { reward })
          const text = mutation ? JSON.stringify(mutated(JSON.parse(line(candidate)), mutation.field, mutation.bit)) : line(candidate)
          const outcome = await b.intake.handle(text, requester.address)
          if (mutation) expect(outcome.outcome).toBe('refused')
          // The same nonce and reward make the held request again, byte for byte (signing is deterministic): a resend.
          else if (replay || line(candidate) === line(current)) expect(outcome.outcome).toBe('resent')
          else if (nonce > heldNonce) {
            expect(outcome.outcome).toBe('accepted')
            current = candidate
          } else expect(outcome).toEqual(refused('stale'))
          counts[outcome.outcome === 'refused' ? 'refused' : outcome.outcome]++
          expect(held(b)).toEqual(current)
        },
      ),
      { numRuns: 120 },
    )
    // Acknowledged: exactly what was held or held again; each refusal counted under its reason.
    expect(b.acks).toHaveLength(counts.accepted + counts.resent)
    const c = b.intake.counters()
    expect([c.accepted, c.resent, Object.values(c.refused).reduce((x, y) => x + (y ?? 0), 0)]).toEqual([counts.accepted, counts.resent, counts.refused])
  })
})
