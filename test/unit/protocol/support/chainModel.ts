import { sha256, type Address, type Hex } from 'viem'
import { balanceHash, ZERO_HASH } from '../../../../src/protocol/balanceProof.ts'
import { LOCKSROOT_OF_NO_LOCKS, locksroot, type Lock } from '../../../../src/protocol/locks.ts'
import type { StateChange } from '../../../../src/protocol/state/changes.ts'
import type { ChainTransaction as Transaction } from '../../../../src/protocol/state/effects.ts'
import { settlementAmounts } from '../../../support/settlement.ts'

type Side = { deposit: bigint; withdrawn: bigint; balanceHash: Hex; nonce: bigint; isCloser: boolean }
type ModelChannel = {
  id: bigint
  a: Address
  b: Address
  settleTimeout: bigint
  state: 'opened' | 'closed' | 'settled'
  closedBlock?: bigint
  sides: Record<string, Side>
}

/** An event of the model chain: public, so every node sees it. */
export type ChainEvent = { change: StateChange }

/**
 * A model of the contracts' rules that the pure-core simulations need (deposit, withdraw, close, update,
 * settle with docs/protocol.md §1.5 arithmetic, unlock, secret registry), with token balances, so a test can check
 * who ends up with what. The real contracts are tested on anvil; this stands in only where no chain runs.
 */
export class ChainModel {
  block = 1n
  readonly tokenNetwork: Address = '0x00000000000000000000000000000000000000A1'
  readonly token: Address = '0x00000000000000000000000000000000000000B2'
  readonly balances = new Map<string, bigint>()
  readonly secrets = new Map<string, bigint>()
  readonly channels = new Map<bigint, ModelChannel>()
  readonly unlockRecords = new Map<string, { locksroot: Hex; amount: bigint }>()
  readonly failures: string[] = []
  private pending: { from: Address; tx: Transaction }[] = []
  private counter = 0n

  private bal(a: Address) {
    return this.balances.get(a.toLowerCase()) ?? 0n
  }
  private pay(a: Address, amount: bigint) {
    this.balances.set(a.toLowerCase(), this.bal(a) + amount)
  }

  open(a: Address, b: Address, settleTimeout: bigint, revealTimeout: bigint): { id: bigint; events: ChainEvent[] } {
    const id = ++this.counter
    const side = (): Side => ({ deposit: 0n, withdrawn: 0n, balanceHash: ZERO_HASH, nonce: 0n, isCloser: false })
    this.channels.set(id, { id, a, b, settleTimeout, state: 'opened', sides: { [a.toLowerCase()]: side(), [b.toLowerCase()]: side() } })
    return {
      id,
      events: [
        {
          change: {
            type: 'channelOpened',
            tokenNetwork: this.tokenNetwork,
            channelId: id,
            participant1: a,
            participant2: b,
            settleTimeout,
            blockNumber: this.block,
            revealTimeout,
          },
        },
      ],
    }
  }

  deposit(id: bigint, who: Address, total: bigint): ChainEvent[] {
    const c = this.channels.get(id)!
    const side = c.sides[who.toLowerCase()]!
    side.deposit = total
    return [{ change: { type: 'channelDeposit', tokenNetwork: this.tokenNetwork, channelId: id, participant: who, totalDeposit: total } }]
  }

  submit(from: Address, tx: Transaction) {
    this.pending.push({ from, tx })
  }

  /** Takes the transactions not yet mined out of the pool: a test delays them (then `submit`s them again) or drops them. */
  takePending(): { from: Address; tx: Transaction }[] {
    const taken = this.pending
    this.pending = []
    return taken
  }

  /** Mines one block: runs the pending transactions in order and returns their events. */
  mine(): ChainEvent[] {
    this.block++
    const events: ChainEvent[] = []
    const txs = this.pending
    this.pending = []
    for (const { from, tx } of txs) {
      const result = this.run(from, tx)
      if (typeof result === 'string') this.failures.push(`${tx.type} by ${from}: ${result}`)
      else events.push(...result)
    }
    return events
  }

  private run(from: Address, tx: Transaction): ChainEvent[] | string {
    const tn = this.tokenNetwork
    if (tx.type === 'registerSecret') {
      if (this.secrets.has(tx.secrethash)) return []
      if (sha256(tx.secret) !== tx.secrethash) return 'bad secret'
      this.secrets.set(tx.secrethash, this.block)
      return [{ change: { type: 'secretRegistered', secrethash: tx.secrethash, secret: tx.secret, blockNumber: this.block } }]
    }
    const c = this.channels.get(tx.channelId)
    if (!c) return 'no channel'
    const side = (a: Address) => c.sides[a.toLowerCase()]!
    switch (tx.type) {
      case 'close': {
        if (c.state !== 'opened') return 'channel not open'
        c.state = 'closed'
        c.closedBlock = this.block
        side(from).isCloser = true
        const bp = tx.balanceProof
        if (bp && bp.nonce > 0n) Object.assign(side(tx.partner), { balanceHash: bp.balanceHash, nonce: bp.nonce })
        return [
          {
            change: {
              type: 'channelClosed',
              tokenNetwork: tn,
              channelId: c.id,
              closer: from,
              nonce: bp?.nonce ?? 0n,
              balanceHash: bp?.balanceHash ?? ZERO_HASH,
              blockNumber: this.block,
            },
          },
        ]
      }
      case 'update': {
        if (c.state !== 'closed') return 'channel not closed'
        const closer = side(tx.partner)
        if (!closer.isCloser) return 'incorrect signature order'
        if (tx.balanceProof.nonce <= closer.nonce) return 'nonce reused'
        Object.assign(closer, { balanceHash: tx.balanceProof.balanceHash, nonce: tx.balanceProof.nonce })
        return [
          {
            change: {
              type: 'nonClosingUpdated',
              tokenNetwork: tn,
              channelId: c.id,
              closer: tx.partner,
              nonce: tx.balanceProof.nonce,
              balanceHash: tx.balanceProof.balanceHash,
            },
          },
        ]
      }
      case 'settle': {
        if (c.state !== 'closed') return 'channel not closed'
        if (this.block <= c.closedBlock! + c.settleTimeout) return 'settlement timeout'
        const s1 = side(tx.participant1)
        const s2 = side(tx.participant2)
        const matches = (s: Side, d: typeof tx.participant1Balance) =>
          (s.balanceHash === ZERO_HASH && d.transferredAmount === 0n && d.lockedAmount === 0n) || s.balanceHash === balanceHash(d)
        if (!matches(s1, tx.participant1Balance) || !matches(s2, tx.participant2Balance)) return 'invalid data'
        const p = (s: Side, d: typeof tx.participant1Balance) => ({
          deposit: s.deposit,
          withdrawn: s.withdrawn,
          transferred: d.transferredAmount,
          locked: d.lockedAmount,
        })
        const amounts = settlementAmounts(p(s1, tx.participant1Balance), p(s2, tx.participant2Balance))
        c.state = 'settled'
        this.pay(tx.participant1, amounts.s1)
        this.pay(tx.participant2, amounts.s2)
        const key = (s: Address, r: Address) => `${c.id}:${s.toLowerCase()}:${r.toLowerCase()}`
        if (amounts.sl1 > 0n)
          this.unlockRecords.set(key(tx.participant1, tx.participant2), { locksroot: tx.participant1Balance.locksroot, amount: amounts.sl1 })
        if (amounts.sl2 > 0n)
          this.unlockRecords.set(key(tx.participant2, tx.participant1), { locksroot: tx.participant2Balance.locksroot, amount: amounts.sl2 })
        return [
          {
            change: {
              type: 'channelSettled',
              tokenNetwork: tn,
              channelId: c.id,
              participant1: tx.participant1,
              participant1Amount: amounts.s1,
              participant1Locksroot: tx.participant1Balance.locksroot,
              participant2: tx.participant2,
              participant2Amount: amounts.s2,
              participant2Locksroot: tx.participant2Balance.locksroot,
              blockNumber: this.block,
            },
          },
        ]
      }
      case 'unlock': {
        if (c.state !== 'settled') return 'channel not settled'
        const key = `${c.id}:${tx.sender.toLowerCase()}:${tx.receiver.toLowerCase()}`
        const record = this.unlockRecords.get(key)
        const root = tx.locks.length ? locksroot(tx.locks) : LOCKSROOT_OF_NO_LOCKS
        if (!record || record.locksroot.toLowerCase() !== root) return 'locksroot mismatch'
        const claimable = tx.locks.reduce((sum: bigint, l: Lock) => {
          const at = this.secrets.get(l.secrethash)
          return at !== undefined && at < l.expiration ? sum + l.amount : sum
        }, 0n)
        const unlocked = claimable < record.amount ? claimable : record.amount
        this.unlockRecords.delete(key)
        this.pay(tx.receiver, unlocked)
        this.pay(tx.sender, record.amount - unlocked)
        return [
          {
            change: {
              type: 'channelUnlocked',
              tokenNetwork: tn,
              channelId: c.id,
              receiver: tx.receiver,
              sender: tx.sender,
              locksroot: root,
              unlockedAmount: unlocked,
              returnedTokens: record.amount - unlocked,
            },
          },
        ]
      }
      case 'setTotalWithdraw': {
        if (c.state !== 'opened') return 'channel not open'
        if (this.block >= tx.expiration) return 'expired'
        const s = side(tx.participant)
        const other = side(tx.participant === c.a ? c.b : c.a)
        if (tx.totalWithdraw + other.withdrawn > s.deposit + other.deposit) return 'withdraw > deposit'
        if (tx.totalWithdraw <= s.withdrawn) return 'amount is zero'
        this.pay(tx.participant, tx.totalWithdraw - s.withdrawn)
        s.withdrawn = tx.totalWithdraw
        return [{ change: { type: 'channelWithdraw', tokenNetwork: tn, channelId: c.id, participant: tx.participant, totalWithdraw: tx.totalWithdraw } }]
      }
      case 'cooperativeSettle': {
        if (c.state !== 'opened') return 'channel not open'
        const partner = tx.partner.address
        const total = side(from).deposit + side(partner).deposit
        if (tx.our.totalWithdraw + tx.partner.totalWithdraw !== total) return 'incomplete amounts'
        if (this.block >= tx.our.expiration) return 'expired'
        this.pay(from, tx.our.totalWithdraw - side(from).withdrawn)
        this.pay(partner, tx.partner.totalWithdraw - side(partner).withdrawn)
        c.state = 'settled'
        return [
          {
            change: {
              type: 'channelSettled',
              tokenNetwork: tn,
              channelId: c.id,
              participant1: from,
              participant1Amount: tx.our.totalWithdraw,
              participant1Locksroot: ZERO_HASH,
              participant2: partner,
              participant2Amount: tx.partner.totalWithdraw,
              participant2Locksroot: ZERO_HASH,
              blockNumber: this.block,
            },
          },
        ]
      }
    }
  }
}
