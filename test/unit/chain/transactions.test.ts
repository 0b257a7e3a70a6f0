import { keccak256, parseEventLogs, toHex, type Address, type Hex, type TransactionReceipt } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { readChannelInfo, readParticipantInfo, readSecretRevealBlock, readTokenBalance } from '../../../src/chain/reads.ts'
import { mintTokens } from '../../../src/chain/erc20.ts'
import { openChannel, registerToken, setTotalDeposit } from '../../../src/chain/tokenNetworkActions.ts'
import { EMPTY_SIGNATURE, protocolTransactionCall, sendProtocolTransaction, transactionFailedChange } from '../../../src/chain/transactions.ts'
import { TokenNetwork } from '../../../src/contracts/index.ts'
import { ZERO_HASH, balanceHash, packBalanceProof } from '../../../src/protocol/balanceProof.ts'
import { LOCKSROOT_OF_NO_LOCKS, encodeLocks, locksroot, secrethashOf, type Lock } from '../../../src/protocol/locks.ts'
import { signPackedSync } from '../../../src/protocol/signature.ts'
import type { ChainTransaction as Transaction } from '../../../src/protocol/state/effects.ts'
import type { BalanceProofState } from '../../../src/protocol/state/types.ts'
import { packWithdraw } from '../../../src/protocol/withdrawProof.ts'
import { startChainTestbed, type Account, type ChainTestbed } from './chainTestbed.ts'
import { jsSecp256k1 } from '../../../src/protocol/secp256k1.ts'

let bed: ChainTestbed
let A: Account, B: Account, C: Account
let tokenNetwork: Address
let secretRegistry: Address
const chainId = 31337n

beforeAll(async () => {
  bed = await startChainTestbed({ accounts: 3 })
  ;[A, B, C] = bed.accounts as [Account, Account, Account]
  secretRegistry = bed.deployment.contracts.SecretRegistry.address
  const token = bed.deployment.tokens.TTT
  tokenNetwork = (await registerToken(A.chain, A.queue, { registry: bed.deployment.contracts.TokenNetworkRegistry.address, token })).tokenNetwork
  for (const who of [A, B, C]) await mintTokens(who.chain, who.queue, { token, amount: 1_000n })
})
afterAll(() => bed.stop())

/** What the partner signs and sends: a balance proof of its side (docs/protocol.md §2.4), as the protocol core stores it. */
function signedProof(signer: Account, channelId: bigint, nonce: bigint, transferredAmount: bigint, locks: Lock[] = []): BalanceProofState {
  const lockedAmount = locks.reduce((sum, l) => sum + l.amount, 0n)
  const root = locksroot(locks)
  const bh = balanceHash({ transferredAmount, lockedAmount, locksroot: root })
  const messageHash = keccak256(toHex(`message ${channelId}/${nonce}`))
  const signature = signPackedSync(
    jsSecp256k1,
    signer.key,
    packBalanceProof({ tokenNetworkAddress: tokenNetwork, chainId, channelIdentifier: channelId, balanceHash: bh, nonce, additionalHash: messageHash }),
  )
  return { nonce, transferredAmount, lockedAmount, locksroot: root, balanceHash: bh, messageHash, signature }
}

function signedWithdraw(signer: Account, channelId: bigint, participant: Address, totalWithdraw: bigint, expiration: bigint): Hex {
  return signPackedSync(
    jsSecp256k1,
    signer.key,
    packWithdraw({ tokenNetworkAddress: tokenNetwork, chainId, channelIdentifier: channelId, participant, totalWithdraw, expiration }),
  )
}

const send = (who: Account, tx: Transaction) => sendProtocolTransaction(tx, { signer: who.chain, secretRegistry, queue: who.queue })

function events(receipt: TransactionReceipt) {
  return parseEventLogs({ abi: TokenNetwork.abi, logs: receipt.logs.filter((l) => l.address.toLowerCase() === tokenNetwork.toLowerCase()) })
}

async function latest(): Promise<bigint> {
  return bed.devnet.getBlockNumber({ cacheTime: 0 })
}

describe('protocol transactions on a real channel', () => {
  test('withdraw, close with the partner proof, update, registerSecret, settle and unlock are all accepted', async () => {
    const { channelId } = await openChannel(A.chain, A.queue, { tokenNetwork, partner: B.chain.address, settleTimeout: 10n, totalDeposit: 100n })
    await setTotalDeposit(B.chain, B.queue, { tokenNetwork, channelId, partner: A.chain.address, totalDeposit: 50n })

    // setTotalWithdraw: B's confirmation signature beside ours.
    const expiration = (await latest()) + 50n
    const withdrawTx: Transaction = {
      type: 'setTotalWithdraw',
      tokenNetwork,
      channelId,
      participant: A.chain.address,
      totalWithdraw: 10n,
      expiration,
      partnerSignature: signedWithdraw(B, channelId, A.chain.address, 10n, expiration),
    }
    const withdrawn = await send(A, withdrawTx)
    expect(events(withdrawn.receipt)).toMatchObject([
      { eventName: 'ChannelWithdraw', args: { channel_identifier: channelId, participant: A.chain.address, total_withdraw: 10n } },
    ])

    // Off-chain history: A paid B 30 and locked 5 more; B paid A 7.
    const secret = keccak256(toHex('transactions test secret'))
    const lock: Lock = { expiration: (await latest()) + 1_000n, amount: 5n, secrethash: secrethashOf(secret) }
    const proofOfA = signedProof(A, channelId, 3n, 30n, [lock])
    const proofOfB = signedProof(B, channelId, 2n, 7n)

    const registered = await send(B, { type: 'registerSecret', secret, secrethash: lock.secrethash })
    expect(await readSecretRevealBlock(B.chain, { secretRegistry, secrethash: lock.secrethash })).toBe(registered.receipt.blockNumber)

    // B closes with A's proof: stored on A's (the non-closer's) record.
    const closed = await send(B, { type: 'close', tokenNetwork, channelId, partner: A.chain.address, balanceProof: proofOfA })
    expect(events(closed.receipt)).toMatchObject([
      { eventName: 'ChannelClosed', args: { closing_participant: B.chain.address, nonce: 3n, balance_hash: proofOfA.balanceHash } },
    ])
    expect(await readParticipantInfo(A.chain, { tokenNetwork, channelId, participant: A.chain.address, partner: B.chain.address })).toMatchObject({
      nonce: 3n,
      balanceHash: proofOfA.balanceHash,
    })

    // A, the non-closer, updates with B's proof: stored on B's (the closer's) record.
    const updated = await send(A, { type: 'update', tokenNetwork, channelId, partner: B.chain.address, balanceProof: proofOfB })
    expect(events(updated.receipt)).toMatchObject([{ eventName: 'NonClosingBalanceProofUpdated', args: { closing_participant: B.chain.address, nonce: 2n } }])
    expect(await readParticipantInfo(A.chain, { tokenNetwork, channelId, participant: B.chain.address, partner: A.chain.address })).toMatchObject({
      nonce: 2n,
      balanceHash: proofOfB.balanceHash,
      isTheCloser: true,
    })

    const { settleBlockNumber } = await readChannelInfo(A.chain, { tokenNetwork, channelId, participant1: A.chain.address, participant2: B.chain.address })
    await bed.devnet.mine({ blocks: Number(settleBlockNumber - (await latest()) + 1n) })
    // B's T+L (7) is smaller than A's (35): B goes first.
    const settled = await send(B, {
      type: 'settle',
      tokenNetwork,
      channelId,
      participant1: B.chain.address,
      participant1Balance: { transferredAmount: 7n, lockedAmount: 0n, locksroot: LOCKSROOT_OF_NO_LOCKS },
      participant2: A.chain.address,
      participant2Balance: { transferredAmount: 30n, lockedAmount: 5n, locksroot: proofOfA.locksroot },
    })
    // Deposits 100 + 50, A withdrew 10: B gets 50 + 30 - 7 = 73, A gets 100 - 10 - 30 + 7 - 5 = 62, 5 stay locked.
    expect(events(settled.receipt)).toMatchObject([
      {
        eventName: 'ChannelSettled',
        args: { participant1: B.chain.address, participant1_amount: 73n, participant2: A.chain.address, participant2_amount: 62n },
      },
    ])

    const balanceOfB = await readTokenBalance(B.chain, { token: bed.deployment.tokens.TTT })
    const unlocked = await send(C, { type: 'unlock', tokenNetwork, channelId, receiver: B.chain.address, sender: A.chain.address, locks: [lock] })
    expect(events(unlocked.receipt)).toMatchObject([
      {
        eventName: 'ChannelUnlocked',
        args: { receiver: B.chain.address, sender: A.chain.address, locksroot: proofOfA.locksroot, unlocked_amount: 5n, returned_tokens: 0n },
      },
    ])
    expect(await readTokenBalance(B.chain, { token: bed.deployment.tokens.TTT })).toBe(balanceOfB + 5n)
  })

  test('close without a partner proof uses nonce 0, zero hashes and an empty partner signature', async () => {
    const { channelId } = await openChannel(A.chain, A.queue, { tokenNetwork, partner: C.chain.address, settleTimeout: 10n })
    const tx: Transaction = { type: 'close', tokenNetwork, channelId, partner: C.chain.address, balanceProof: null }
    const call = protocolTransactionCall(tx, { signer: A.chain, secretRegistry })
    expect(call.data).toContain(EMPTY_SIGNATURE.slice(2))
    const closed = await A.queue.send(call)
    expect(events(closed.receipt)).toMatchObject([
      { eventName: 'ChannelClosed', args: { closing_participant: A.chain.address, nonce: 0n, balance_hash: ZERO_HASH } },
    ])
    expect((await readChannelInfo(A.chain, { tokenNetwork, channelId, participant1: A.chain.address, participant2: C.chain.address })).state).toBe('closed')
  })

  test('cooperativeSettle puts all four withdraw signatures in the right slots', async () => {
    const { channelId } = await openChannel(B.chain, B.queue, { tokenNetwork, partner: C.chain.address, settleTimeout: 10n, totalDeposit: 20n })
    await setTotalDeposit(C.chain, C.queue, { tokenNetwork, channelId, partner: B.chain.address, totalDeposit: 10n })
    const expiration = (await latest()) + 20n
    // B paid C 15 off-chain: B withdraws 5, C withdraws 25.
    const tx: Transaction = {
      type: 'cooperativeSettle',
      tokenNetwork,
      channelId,
      our: { totalWithdraw: 5n, expiration, partnerSignature: signedWithdraw(C, channelId, B.chain.address, 5n, expiration) },
      partner: { address: C.chain.address, totalWithdraw: 25n, expiration, partnerSignature: signedWithdraw(C, channelId, C.chain.address, 25n, expiration) },
    }
    const settled = await send(B, tx)
    const emitted = events(settled.receipt)
    expect(emitted.map((e) => e.eventName)).toEqual(['ChannelWithdraw', 'ChannelWithdraw', 'ChannelSettled'])
    expect(emitted[2]).toMatchObject({
      args: { channel_identifier: channelId, participant1: B.chain.address, participant1_amount: 5n, participant2: C.chain.address, participant2_amount: 25n },
    })
    // No locks were left, so the channel reads as removed rather than settled.
    expect((await readChannelInfo(B.chain, { tokenNetwork, channelId, participant1: B.chain.address, participant2: C.chain.address })).state).toBe('removed')
  })

  test('a refused transaction maps to the transactionFailed state change with the contract reason', async () => {
    const partner = privateKeyToAccount(generatePrivateKey()).address
    const { channelId } = await openChannel(C.chain, C.queue, { tokenNetwork, partner, settleTimeout: 10n })
    await send(C, { type: 'close', tokenNetwork, channelId, partner, balanceProof: null })
    const empty = { transferredAmount: 0n, lockedAmount: 0n, locksroot: LOCKSROOT_OF_NO_LOCKS }
    const early: Transaction = {
      type: 'settle',
      tokenNetwork,
      channelId,
      participant1: partner,
      participant1Balance: empty,
      participant2: C.chain.address,
      participant2Balance: empty,
    }
    const error = await send(C, early).catch((e: unknown) => e)
    expect(transactionFailedChange(early, error)).toEqual({
      type: 'transactionFailed',
      transaction: 'settle',
      tokenNetwork,
      channelId,
      reason: 'TN/settle: settlement timeout',
    })
    const secrethash = secrethashOf(ZERO_HASH)
    expect(transactionFailedChange({ type: 'registerSecret', secret: ZERO_HASH, secrethash }, new Error('boom'))).toEqual({
      type: 'transactionFailed',
      transaction: 'registerSecret',
      secrethash,
      reason: 'boom',
    })
  })

  test('an update needs a signed partner proof with nonce > 0', () => {
    const unsigned: BalanceProofState = {
      nonce: 1n,
      transferredAmount: 1n,
      lockedAmount: 0n,
      locksroot: LOCKSROOT_OF_NO_LOCKS,
      balanceHash: ZERO_HASH,
      messageHash: ZERO_HASH,
    }
    expect(() =>
      protocolTransactionCall(
        { type: 'update', tokenNetwork, channelId: 1n, partner: B.chain.address, balanceProof: unsigned },
        { signer: A.chain, secretRegistry },
      ),
    ).toThrow(RangeError)
  })

  test('unlock sends the locks in insertion order, as encodeLocks packs them', () => {
    const locks: Lock[] = [
      { expiration: 9n, amount: 1n, secrethash: keccak256(toHex('b')) },
      { expiration: 8n, amount: 2n, secrethash: keccak256(toHex('a')) },
    ]
    const call = protocolTransactionCall(
      { type: 'unlock', tokenNetwork, channelId: 4n, receiver: A.chain.address, sender: B.chain.address, locks },
      { signer: A.chain, secretRegistry },
    )
    expect(call.data).toContain(encodeLocks(locks).slice(2))
    expect(call.to).toBe(tokenNetwork)
  })
})
