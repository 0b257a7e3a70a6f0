import { concatHex, encodePacked, keccak256, parseEventLogs, sliceHex, type Address, type Hex } from 'viem'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { OneToN } from '../../src/contracts/index.ts'
import { anvilKeys, startAnvil, type Anvil } from '../../src/devnet/anvil.ts'
import { packIou, type Iou } from '../../src/protocol/iou.ts'
import { signPacked } from '../../src/protocol/signature.ts'
import { snapshotEach } from '../support/chainSuite.ts'
import { anvilClient, type AnvilClient } from '../support/clients.ts'
import { deploy } from '../support/deploy.ts'
import { expectRevert } from '../support/revert.ts'
import { deployServices, depositToUdc, mined, mineTo, registerService, udcBalance, type Services } from '../support/services.ts'
import { jsSecp256k1 } from '../../src/protocol/secp256k1.ts'

let anvil: Anvil
let client: AnvilClient
let alice: AnvilClient // pays for routes
let bob: AnvilClient // pays for routes too
let pfs: AnvilClient // a registered pathfinding service
let stranger: AnvilClient // never registers
let s: Services

const oneToN = () => ({ address: s.oneToN, abi: OneToN.abi }) as const
const keyOf = new Map<string, Hex>()

/** An IOU from `sender` to the registered service, 10 tokens, expiring 20 blocks from now unless overridden. */
async function makeIou(sender: AnvilClient, overrides: Partial<Iou> = {}): Promise<Iou> {
  return {
    oneToNAddress: s.oneToN,
    chainId: s.chainId,
    sender: sender.account.address,
    receiver: pfs.account.address,
    amount: 10n,
    expirationBlock: (await client.getBlockNumber()) + 20n,
    ...overrides,
  }
}

/** The sender's EIP-191 signature over the 188 packed bytes, made in TypeScript. */
function signIou(iou: Iou, signer: Address = iou.sender): Promise<Hex> {
  return signPacked(jsSecp256k1, keyOf.get(signer)!, packIou(iou))
}

const claimArgs = (iou: Iou, signature: Hex) => [iou.sender, iou.receiver, iou.amount, iou.expirationBlock, signature] as const

const sessionKey = (iou: Iou) => keccak256(encodePacked(['address', 'address', 'uint256'], [iou.receiver, iou.sender, iou.expirationBlock]))

beforeAll(async () => {
  anvil = await startAnvil()
  ;[client, alice, bob, pfs, stranger] = [0, 1, 2, 3, 4].map((i) => anvilClient(anvil.rpcUrl, anvilKeys[i]!)) as [
    AnvilClient,
    AnvilClient,
    AnvilClient,
    AnvilClient,
    AnvilClient,
  ]
  for (const [i, c] of [client, alice, bob, pfs, stranger].entries()) keyOf.set(c.account.address, anvilKeys[i]!)
  s = await deployServices(client)
  await registerService(pfs, s)
  await depositToUdc(alice, s, alice.account.address, 30n)
  await depositToUdc(bob, s, bob.account.address, 30n)
})
afterAll(() => anvil.stop())
snapshotEach(() => client)

test('exposes the user deposit, the service registry and the chain id it was deployed with', async () => {
  expect(await client.readContract({ ...oneToN(), functionName: 'deposit_contract' })).toBe(s.userDeposit)
  expect(await client.readContract({ ...oneToN(), functionName: 'service_registry_contract' })).toBe(s.serviceRegistry)
  expect(await client.readContract({ ...oneToN(), functionName: 'chain_id' })).toBe(31337n)
})

describe('claim', () => {
  test('an IOU signed in TypeScript pays the service from the sender deposit and closes the session', async () => {
    const iou = await makeIou(alice)
    const signature = await signIou(iou)
    const { result } = await pfs.simulateContract({ ...oneToN(), functionName: 'claim', args: claimArgs(iou, signature) })
    expect(result).toBe(10n)
    const receipt = await mined(pfs, pfs.writeContract({ ...oneToN(), functionName: 'claim', args: claimArgs(iou, signature) }))
    expect(await udcBalance(client, s, alice.account.address)).toBe(20n)
    expect(await udcBalance(client, s, pfs.account.address)).toBe(10n)
    const [claimed] = parseEventLogs({ abi: OneToN.abi, logs: receipt.logs, eventName: 'Claimed' })
    expect(claimed?.args).toEqual({ sender: iou.sender, receiver: iou.receiver, expiration_block: iou.expirationBlock, transferred: 10n })
    // The session key is keccak(receiver || sender || expiration) and stores the expiration block.
    expect(await client.readContract({ ...oneToN(), functionName: 'settled_sessions', args: [sessionKey(iou)] })).toBe(iou.expirationBlock)
  })

  test('anyone may submit the claim; the money still goes to the receiver', async () => {
    const iou = await makeIou(alice)
    await mined(stranger, stranger.writeContract({ ...oneToN(), functionName: 'claim', args: claimArgs(iou, await signIou(iou)) }))
    expect(await udcBalance(client, s, pfs.account.address)).toBe(10n)
    expect(await udcBalance(client, s, stranger.account.address)).toBe(0n)
  })

  test('a session is paid once: the same IOU, or a bigger one for the same expiration, is refused afterwards', async () => {
    const iou = await makeIou(alice)
    await mined(pfs, pfs.writeContract({ ...oneToN(), functionName: 'claim', args: claimArgs(iou, await signIou(iou)) }))
    await expectRevert(pfs.simulateContract({ ...oneToN(), functionName: 'claim', args: claimArgs(iou, await signIou(iou)) }), 'Already settled session')
    const bigger = { ...iou, amount: 15n }
    await expectRevert(pfs.simulateContract({ ...oneToN(), functionName: 'claim', args: claimArgs(bigger, await signIou(bigger)) }), 'Already settled session')
    // Another expiration is another session.
    const next = { ...iou, expirationBlock: iou.expirationBlock + 1n }
    await mined(pfs, pfs.writeContract({ ...oneToN(), functionName: 'claim', args: claimArgs(next, await signIou(next)) }))
    expect(await udcBalance(client, s, pfs.account.address)).toBe(20n)
  })

  test('only registered services can claim, and a lapsed registration no longer counts', async () => {
    const unregistered = await makeIou(alice, { receiver: stranger.account.address })
    await expectRevert(
      stranger.simulateContract({ ...oneToN(), functionName: 'claim', args: claimArgs(unregistered, await signIou(unregistered)) }),
      'receiver not registered',
    )
    const iou = await makeIou(alice)
    const signature = await signIou(iou)
    await client.increaseTime({ seconds: 181 * 86400 })
    await client.mine({ blocks: 1 })
    await expectRevert(pfs.simulateContract({ ...oneToN(), functionName: 'claim', args: claimArgs(iou, signature) }), 'receiver not registered')
  })

  test('an IOU can be claimed in its expiration block and not one block later', async () => {
    const expiration = (await client.getBlockNumber()) + 10n
    const iou = await makeIou(alice, { expirationBlock: expiration })
    const signature = await signIou(iou)
    await mineTo(client, expiration)
    // eth_call sees block.number = expiration: still claimable.
    expect((await pfs.simulateContract({ ...oneToN(), functionName: 'claim', args: claimArgs(iou, signature) })).result).toBe(10n)
    await mineTo(client, expiration + 1n)
    await expectRevert(pfs.simulateContract({ ...oneToN(), functionName: 'claim', args: claimArgs(iou, signature) }), 'IOU expired')
  })

  test('a claim transaction mined in the expiration block itself is paid', async () => {
    const expiration = (await client.getBlockNumber()) + 10n
    const iou = await makeIou(alice, { expirationBlock: expiration })
    const signature = await signIou(iou)
    await mineTo(client, expiration - 1n)
    const receipt = await mined(pfs, pfs.writeContract({ ...oneToN(), functionName: 'claim', args: claimArgs(iou, signature) }))
    expect(receipt.blockNumber).toBe(expiration)
  })

  test('the signature covers every field: changing any one of them is refused', async () => {
    const iou = await makeIou(alice)
    const signature = await signIou(iou)
    const claimWith = (changed: Iou, sig: Hex = signature) => pfs.simulateContract({ ...oneToN(), functionName: 'claim', args: claimArgs(changed, sig) })
    // Claiming with the right signature but one field changed.
    await expectRevert(claimWith({ ...iou, sender: bob.account.address }), 'Signature mismatch')
    await expectRevert(claimWith({ ...iou, amount: 11n }), 'Signature mismatch')
    await expectRevert(claimWith({ ...iou, expirationBlock: iou.expirationBlock + 1n }), 'Signature mismatch')
    // Another registered receiver cannot use it either.
    await registerService(stranger, s)
    await expectRevert(claimWith({ ...iou, receiver: stranger.account.address }), 'Signature mismatch')
    // Signed for another OneToN contract or another chain id.
    await expectRevert(claimWith(iou, await signIou({ ...iou, oneToNAddress: s.userDeposit })), 'Signature mismatch')
    await expectRevert(claimWith(iou, await signIou({ ...iou, chainId: 77n })), 'Signature mismatch')
    // Signed by someone else than the sender.
    await expectRevert(claimWith(iou, await signIou(iou, bob.account.address)), 'Signature mismatch')
    // And the untouched IOU still goes through.
    expect((await claimWith(iou)).result).toBe(10n)
  })

  test('a malformed signature reverts without a reason', async () => {
    const iou = await makeIou(alice)
    const signature = await signIou(iou)
    await expectRevert(pfs.simulateContract({ ...oneToN(), functionName: 'claim', args: claimArgs(iou, sliceHex(signature, 0, 64)) }), 'no reason')
    const badV = concatHex([sliceHex(signature, 0, 64), '0x1d'])
    await expectRevert(pfs.simulateContract({ ...oneToN(), functionName: 'claim', args: claimArgs(iou, badV) }), 'no reason')
  })

  test('v = 0/1 signatures are accepted like 27/28', async () => {
    const iou = await makeIou(alice)
    const signature = await signIou(iou)
    const v = Number(sliceHex(signature, 64))
    const lowV = concatHex([sliceHex(signature, 0, 64), v === 27 ? '0x00' : '0x01'])
    expect((await pfs.simulateContract({ ...oneToN(), functionName: 'claim', args: claimArgs(iou, lowV) })).result).toBe(10n)
  })

  test('with a low deposit the claim pays what is there; an empty deposit pays nothing and leaves the IOU claimable', async () => {
    const iou = await makeIou(alice, { amount: 50n })
    const signature = await signIou(iou)
    expect((await pfs.simulateContract({ ...oneToN(), functionName: 'claim', args: claimArgs(iou, signature) })).result).toBe(30n)
    await mined(pfs, pfs.writeContract({ ...oneToN(), functionName: 'claim', args: claimArgs(iou, signature) }))
    expect(await udcBalance(client, s, alice.account.address)).toBe(0n)
    expect(await udcBalance(client, s, pfs.account.address)).toBe(30n)
    // The partly paid session is closed.
    await expectRevert(pfs.simulateContract({ ...oneToN(), functionName: 'claim', args: claimArgs(iou, signature) }), 'Already settled session')

    // Nothing to pay: no event, no session recorded, and the IOU can be claimed after a new deposit.
    const later = await makeIou(alice, { amount: 10n, expirationBlock: iou.expirationBlock + 5n })
    const laterSignature = await signIou(later)
    const empty = await mined(pfs, pfs.writeContract({ ...oneToN(), functionName: 'claim', args: claimArgs(later, laterSignature) }))
    expect(empty.logs).toHaveLength(0)
    expect(await client.readContract({ ...oneToN(), functionName: 'settled_sessions', args: [sessionKey(later)] })).toBe(0n)
    await depositToUdc(alice, s, alice.account.address, 4n)
    const paid = await mined(pfs, pfs.writeContract({ ...oneToN(), functionName: 'claim', args: claimArgs(later, laterSignature) }))
    const [claimed] = parseEventLogs({ abi: OneToN.abi, logs: paid.logs, eventName: 'Claimed' })
    expect(claimed?.args.transferred).toBe(4n)
  })

  test('a service cannot claim an IOU it signed to itself', async () => {
    await depositToUdc(pfs, s, pfs.account.address, 10n)
    const iou = await makeIou(pfs)
    await expectRevert(pfs.simulateContract({ ...oneToN(), functionName: 'claim', args: claimArgs(iou, await signIou(iou)) }), 'sender == receiver')
  })

  test('a OneToN that the user deposit does not know cannot move money', async () => {
    const rogue = await deploy(client, OneToN, [s.userDeposit, s.chainId, s.serviceRegistry])
    const iou = await makeIou(alice, { oneToNAddress: rogue })
    await expectRevert(
      pfs.simulateContract({ address: rogue, abi: OneToN.abi, functionName: 'claim', args: claimArgs(iou, await signIou(iou)) }),
      'unknown caller',
    )
  })

  test('IOUs carry the chain id given at deployment, not the chain the contract runs on', async () => {
    const other = await deploy(client, OneToN, [s.userDeposit, 77n, s.serviceRegistry])
    const iou = await makeIou(alice, { oneToNAddress: other, chainId: 77n })
    const asAnvil = { ...iou, chainId: 31337n }
    const claimOther = (signature: Hex) => pfs.simulateContract({ address: other, abi: OneToN.abi, functionName: 'claim', args: claimArgs(iou, signature) })
    await expectRevert(claimOther(await signIou(asAnvil)), 'Signature mismatch')
    // It gets as far as paying, which fails only because this OneToN is not wired into the user deposit.
    await expectRevert(claimOther(await signIou(iou)), 'unknown caller')
  })
})

describe('bulkClaim', () => {
  async function batch(ious: Iou[]) {
    return {
      senders: ious.map((i) => i.sender),
      receivers: ious.map((i) => i.receiver),
      amounts: ious.map((i) => i.amount),
      expirations: ious.map((i) => i.expirationBlock),
      signatures: concatHex(await Promise.all(ious.map((i) => signIou(i)))),
    }
  }
  const bulk = (b: Awaited<ReturnType<typeof batch>>) => [b.senders, b.receivers, b.amounts, b.expirations, b.signatures] as const

  test('pays several IOUs in one transaction and returns the sum', async () => {
    const b = await batch([await makeIou(alice, { amount: 10n }), await makeIou(bob, { amount: 20n })])
    expect((await pfs.simulateContract({ ...oneToN(), functionName: 'bulkClaim', args: bulk(b) })).result).toBe(30n)
    const receipt = await mined(pfs, pfs.writeContract({ ...oneToN(), functionName: 'bulkClaim', args: bulk(b) }))
    expect(parseEventLogs({ abi: OneToN.abi, logs: receipt.logs, eventName: 'Claimed' })).toHaveLength(2)
    expect(await udcBalance(client, s, alice.account.address)).toBe(20n)
    expect(await udcBalance(client, s, bob.account.address)).toBe(10n)
    expect(await udcBalance(client, s, pfs.account.address)).toBe(30n)
  })

  test('sums partial payments and counts an empty batch as zero', async () => {
    const b = await batch([await makeIou(alice, { amount: 100n }), await makeIou(bob, { amount: 5n })])
    expect((await pfs.simulateContract({ ...oneToN(), functionName: 'bulkClaim', args: bulk(b) })).result).toBe(35n)
    const empty = await pfs.simulateContract({ ...oneToN(), functionName: 'bulkClaim', args: [[], [], [], [], '0x'] })
    expect(empty.result).toBe(0n)
  })

  test('every array must have one entry per IOU', async () => {
    const b = await batch([await makeIou(alice), await makeIou(bob)])
    const reason = 'Same number of elements required for all input parameters'
    await expectRevert(pfs.simulateContract({ ...oneToN(), functionName: 'bulkClaim', args: bulk({ ...b, senders: b.senders.slice(1) }) }), reason)
    await expectRevert(pfs.simulateContract({ ...oneToN(), functionName: 'bulkClaim', args: bulk({ ...b, receivers: b.receivers.slice(1) }) }), reason)
    await expectRevert(pfs.simulateContract({ ...oneToN(), functionName: 'bulkClaim', args: bulk({ ...b, amounts: [...b.amounts, 1n] }) }), reason)
    await expectRevert(pfs.simulateContract({ ...oneToN(), functionName: 'bulkClaim', args: bulk({ ...b, expirations: b.expirations.slice(1) }) }), reason)
  })

  test('signatures must be exactly 65 bytes per IOU', async () => {
    const b = await batch([await makeIou(alice), await makeIou(bob)])
    const reason = '`signatures` should contain 65 bytes per IOU'
    await expectRevert(
      pfs.simulateContract({ ...oneToN(), functionName: 'bulkClaim', args: bulk({ ...b, signatures: concatHex([b.signatures, '0x01']) }) }),
      reason,
    )
    await expectRevert(
      pfs.simulateContract({ ...oneToN(), functionName: 'bulkClaim', args: bulk({ ...b, signatures: sliceHex(b.signatures, 0, 129) }) }),
      reason,
    )
  })

  test('one bad IOU makes the whole batch fail, paying nobody', async () => {
    const b = await batch([await makeIou(alice), await makeIou(bob)])
    await expectRevert(
      pfs.simulateContract({ ...oneToN(), functionName: 'bulkClaim', args: bulk({ ...b, amounts: [b.amounts[0]!, b.amounts[1]! + 1n] }) }),
      'Signature mismatch',
    )
    await mined(
      pfs,
      pfs.writeContract({
        ...oneToN(),
        functionName: 'claim',
        args: [b.senders[1]!, b.receivers[1]!, b.amounts[1]!, b.expirations[1]!, sliceHex(b.signatures, 65)],
      }),
    )
    await expectRevert(pfs.simulateContract({ ...oneToN(), functionName: 'bulkClaim', args: bulk(b) }), 'Already settled session')
  })
})
