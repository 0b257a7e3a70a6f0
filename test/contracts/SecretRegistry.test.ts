import { parseEventLogs, sha256, keccak256, type Hex } from 'viem'
import { expect, test } from 'vitest'
import { SecretRegistry } from '../../src/contracts/index.ts'
import { useChain } from '../support/chainSuite.ts'
import { mined, secretFor, type ChainFixture, type Party } from '../support/tokenNetwork.ts'

let fx: ChainFixture
let alice: Party
let bob: Party
useChain(
  (t) =>
    ({
      fx,
      parties: [alice, bob],
    } = t),
)

const register = async (who: Party, secret: Hex) =>
  mined(who.client, await who.client.writeContract({ address: fx.secretRegistry, abi: SecretRegistry.abi, functionName: 'registerSecret', args: [secret] }))
const simulateRegister = async (who: Party, secret: Hex) =>
  (await who.client.simulateContract({ address: fx.secretRegistry, abi: SecretRegistry.abi, functionName: 'registerSecret', args: [secret] })).result
const revealBlock = (secrethash: Hex) =>
  fx.controller.client.readContract({ address: fx.secretRegistry, abi: SecretRegistry.abi, functionName: 'getSecretRevealBlockHeight', args: [secrethash] })
const revealedEvents = (logs: Parameters<typeof parseEventLogs>[0]['logs']) => parseEventLogs({ abi: SecretRegistry.abi, eventName: 'SecretRevealed', logs })

test('invariant 18: registerSecret returns true the first time and false afterwards, whoever calls it', async () => {
  const { secret } = secretFor('once')
  expect(await simulateRegister(alice, secret)).toBe(true)
  await register(alice, secret)
  expect(await simulateRegister(alice, secret)).toBe(false)
  expect(await simulateRegister(bob, secret)).toBe(false)
})

test('invariant 18: the reveal block is the block of the first registration; a later one changes nothing and emits nothing', async () => {
  const { secret, secrethash } = secretFor('first block')
  const first = await register(alice, secret)
  expect(await revealBlock(secrethash)).toBe(first.blockNumber)
  const events = revealedEvents(first.logs)
  expect(events).toHaveLength(1)
  expect(events[0]!.args).toEqual({ secrethash, secret })

  await fx.controller.client.mine({ blocks: 3 })
  const again = await register(bob, secret)
  expect(again.blockNumber).toBeGreaterThan(first.blockNumber)
  expect(revealedEvents(again.logs)).toHaveLength(0)
  expect(await revealBlock(secrethash)).toBe(first.blockNumber)
})

test('the secrethash is the sha256 of the 32-byte secret (keccak of it stays unknown)', async () => {
  const { secret } = secretFor('sha')
  await register(alice, secret)
  expect(await revealBlock(sha256(secret))).toBeGreaterThan(0n)
  expect(await revealBlock(keccak256(secret))).toBe(0n)
})

test('invariant 18: the all-zero secret is accepted like any other', async () => {
  const zero: Hex = `0x${'00'.repeat(32)}`
  expect(await simulateRegister(alice, zero)).toBe(true)
  const receipt = await register(alice, zero)
  expect(await revealBlock(sha256(zero))).toBe(receipt.blockNumber)
})

test('an unknown secrethash has reveal block 0', async () => {
  expect(await revealBlock(secretFor('never registered').secrethash)).toBe(0n)
})

test('invariant 18: registerSecretBatch returns true only if every secret is new, and still registers the new ones', async () => {
  const [s1, s2, s3] = ['b1', 'b2', 'b3'].map((l) => secretFor(l)) as [ReturnType<typeof secretFor>, ReturnType<typeof secretFor>, ReturnType<typeof secretFor>]
  const batch = (secrets: Hex[]) =>
    alice.client.simulateContract({ address: fx.secretRegistry, abi: SecretRegistry.abi, functionName: 'registerSecretBatch', args: [secrets] })
  expect((await batch([s1.secret, s2.secret])).result).toBe(true)
  await register(bob, s1.secret)
  expect((await batch([s1.secret, s2.secret, s3.secret])).result).toBe(false)

  const receipt = await mined(
    alice.client,
    await alice.client.writeContract({
      address: fx.secretRegistry,
      abi: SecretRegistry.abi,
      functionName: 'registerSecretBatch',
      args: [[s1.secret, s2.secret, s3.secret]],
    }),
  )
  // One event per newly registered secret, none for the known one.
  expect(revealedEvents(receipt.logs).map((e) => e.args.secrethash)).toEqual([s2.secrethash, s3.secrethash])
  expect(await revealBlock(s2.secrethash)).toBe(receipt.blockNumber)
  expect(await revealBlock(s3.secrethash)).toBe(receipt.blockNumber)
  expect(await revealBlock(s1.secrethash)).toBeLessThan(receipt.blockNumber)
})

test('a batch repeating one new secret registers it once and returns false', async () => {
  const { secret } = secretFor('twice in one batch')
  const { result } = await alice.client.simulateContract({
    address: fx.secretRegistry,
    abi: SecretRegistry.abi,
    functionName: 'registerSecretBatch',
    args: [[secret, secret]],
  })
  expect(result).toBe(false)
  const receipt = await mined(
    alice.client,
    await alice.client.writeContract({ address: fx.secretRegistry, abi: SecretRegistry.abi, functionName: 'registerSecretBatch', args: [[secret, secret]] }),
  )
  expect(revealedEvents(receipt.logs)).toHaveLength(1)
})

test('an empty batch returns true and registers nothing', async () => {
  const { result } = await alice.client.simulateContract({
    address: fx.secretRegistry,
    abi: SecretRegistry.abi,
    functionName: 'registerSecretBatch',
    args: [[]],
  })
  expect(result).toBe(true)
})
