import { TransactionReceiptNotFoundError, TransactionNotFoundError, zeroAddress, type Address, type Hex } from 'viem'
import type { ChainClient } from '../chain/chainClient.ts'
import { claimRewardCall, monitorCall, readFirstBlockAllowedToMonitor, readMonitoringReward } from '../chain/monitoringService.ts'
import { read, readChannelInfo, readParticipantInfo } from '../chain/reads.ts'
import { waitForReceipt } from '../chain/receipt.ts'
import { simulateCall } from '../chain/simulate.ts'
import type { ChainCall, TransactionQueue } from '../chain/transactionQueue.ts'
import { UserDeposit } from '../contracts/index.ts'
import { errorLine } from './serviceAccount.ts'
import type { ClaimStep, Duty, MonitorStep, WatchedChannel } from './records.ts'
import type { MonitorStore } from './store.ts'

export type DutyRunnerParameters = {
  chain: ChainClient
  queue: TransactionQueue
  store: MonitorStore
  monitoringService: Address
  userDeposit: Address
  /** A failure worth the operator's attention (a duty keeps trying): for the log. */
  onError(where: string, error: unknown): void
  /** Told what the service did on-chain, for the log. */
  onSent?(description: string, hash: Hex): void
}

/** Revert reasons that mean "not yet": the duty is tried again at a later block. */
const NOT_YET = ['not allowed to monitor', 'channel not settled yet', 'too early channel state']

/** The key a step's transaction has in the queue's journal: one per channel, requester and step. */
const stepKey = (channel: WatchedChannel, requester: string, which: 'monitor' | 'claim') =>
  `${which}:${channel.tokenNetwork.toLowerCase()}:${channel.channelId}:${requester.toLowerCase()}`

/** A step's status and note as stored; a duty's record is written only when one of them changes. */
type Step = MonitorStep | ClaimStep

/**
 * Carries out the duties partners' closes left (docs/decisions/0031): `monitor` inside the contract's window when the
 * chain does not hold the requester's newest proof yet, then `claimReward` once the settle window is over. Before
 * every transaction it reads the chain and simulates the call in the latest block: it never sends what the chain's
 * own checks show must revert. A duty is marked `sending` (durably) before its transaction is broadcast and `sent`
 * with its hash right after, so a restart looks for that transaction instead of sending another.
 */
export class DutyRunner {
  private readonly running = new Set<string>()
  private stopped = false

  constructor(private readonly p: DutyRunnerParameters) {}

  /** Starts every open duty that is not under way; does not wait for them. */
  runDue(): void {
    if (this.stopped) return
    for (const key of this.p.store.openChannels()) {
      const channel = this.p.store.channels.get(key)
      if (!channel) continue
      for (const [requester, duty] of Object.entries(channel.duties)) {
        const id = `${key}|${requester}`
        if (this.running.has(id)) continue
        const task = this.taskOf(channel, requester, duty)
        if (!task) continue
        this.running.add(id)
        void task()
          .catch((error: unknown) => {
            if (!this.stopped) this.p.onError(`duty ${channel.tokenNetwork} ${channel.channelId} ${requester}`, error)
          })
          .finally(() => this.running.delete(id))
      }
    }
  }

  /** Starts nothing more and waits for the duties under way to stop (a send under way is resumed at the next start). */
  async stop(): Promise<void> {
    this.stopped = true
    while (this.running.size > 0) await new Promise((r) => setTimeout(r, 10))
  }

  /** How many duties are being worked on now. */
  get busy(): number {
    return this.running.size
  }

  private taskOf(channel: WatchedChannel, requester: string, duty: Duty): (() => Promise<void>) | undefined {
    switch (duty.monitor.status) {
      case 'due':
        return () => this.monitor(channel, requester, duty)
      case 'sending':
      case 'sent':
        return () => this.resume(channel, requester, 'monitor', duty.monitor)
    }
    switch (duty.claim?.status) {
      case 'due':
        return () => this.claim(channel, requester, duty)
      case 'sending':
      case 'sent':
        return () => this.resume(channel, requester, 'claim', duty.claim!)
    }
    return undefined
  }

  /** Writes one step of a duty, unless the record changed its status meanwhile (an event got there first). */
  private async write(channel: WatchedChannel, requester: string, which: 'monitor' | 'claim', from: Step['status'], next: Partial<Step>, also?: Partial<Duty>) {
    const key = `${channel.tokenNetwork.toLowerCase()}:${channel.channelId}`
    await this.p.store.transact((tx) => {
      // Only the lease holder carries out duties (docs/decisions/0077): a former holder's write is refused here.
      tx.requireLease()
      const current = tx.channel(key)
      const duty = current?.duties[requester]
      const step = duty?.[which]
      if (!current || !duty || !step || step.status !== from) return
      const { note: _, ...kept } = step
      duty[which] = { ...kept, ...next } as never
      if (also) Object.assign(duty, also)
      tx.putChannel(current)
    })
  }

  /** Keeps a step as it is but with a new note (written only when the note changes). */
  private async note(channel: WatchedChannel, requester: string, which: 'monitor' | 'claim', step: Step, note: string) {
    if (step.note !== note) await this.write(channel, requester, which, step.status, { note })
  }

  private async monitor(channel: WatchedChannel, requester: string, duty: Duty): Promise<void> {
    const { chain, monitoringService } = this.p
    const step = duty.monitor
    const held = channel.requests[requester]
    if (!held) return this.write(channel, requester, 'monitor', 'due', { status: 'not_needed', note: 'no request held' })
    const request = held.request
    const nonce = request.balance_proof.nonce
    const channelId = channel.channelId
    const tokenNetwork = channel.tokenNetwork
    const { closing, nonClosing } = duty
    const [info, onChain, latest] = await Promise.all([
      readChannelInfo(chain, { tokenNetwork, channelId, participant1: closing, participant2: nonClosing }),
      readParticipantInfo(chain, { tokenNetwork, channelId, participant: closing, partner: nonClosing }),
      chain.publicClient.getBlockNumber({ cacheTime: 0 }),
    ])
    if (info.state === 'settled' || info.state === 'removed')
      return this.write(channel, requester, 'monitor', 'due', { status: 'missed', note: 'settled before it was submitted' })
    if (info.state !== 'closed') return this.note(channel, requester, 'monitor', step, `the channel is ${info.state} on-chain`)
    if (onChain.nonce >= nonce)
      return this.write(channel, requester, 'monitor', 'due', { status: 'not_needed', note: `the chain already holds nonce ${onChain.nonce}` })

    let first: bigint
    try {
      first = await readFirstBlockAllowedToMonitor(chain, { monitoringService, tokenNetwork, channelId, closing, nonClosing })
    } catch (error) {
      return this.note(channel, requester, 'monitor', step, `the contract gives no first block: ${errorLine(error)}`)
    }
    // eth_call runs with the latest block's number: from `first` on, the simulation and the transaction both pass.
    if (latest < first) return this.note(channel, requester, 'monitor', step, `waiting for block ${first}`)
    const balance = await read(chain, this.p.userDeposit, UserDeposit.abi, 'effectiveBalance', [nonClosing])
    if (balance < request.reward_amount)
      return this.note(channel, requester, 'monitor', step, `the requester's UserDeposit holds ${balance}, less than the reward ${request.reward_amount}`)

    const call = monitorCall(monitoringService, request, closing)
    if (!(await this.simulated(channel, requester, 'monitor', step, call))) return
    // The proof counts until the closer may settle: the settle block is the transaction's deadline.
    await this.send(
      channel,
      requester,
      'monitor',
      call,
      { nonce, rewardAmount: request.reward_amount },
      (blockNumber) => ({
        claim: request.reward_amount > 0n ? { status: 'due', amount: request.reward_amount } : { status: 'nothing', amount: 0n },
        monitor: { status: 'done', nonce, rewardAmount: request.reward_amount, blockNumber },
      }),
      info.settleBlockNumber,
    )
  }

  private async claim(channel: WatchedChannel, requester: string, duty: Duty): Promise<void> {
    const { chain, monitoringService } = this.p
    const step = duty.claim!
    const { tokenNetwork, channelId } = channel
    const [reward, info, latest] = await Promise.all([
      readMonitoringReward(chain, { monitoringService, tokenNetwork, channelId }),
      readChannelInfo(chain, { tokenNetwork, channelId, participant1: duty.closing, participant2: duty.nonClosing }),
      chain.publicClient.getBlockNumber({ cacheTime: 0 }),
    ])
    if (reward.rewardSender === zeroAddress)
      // Paid out already (anyone may call claimReward), or our own claim sent before a restart: its RewardClaimed says.
      return this.note(channel, requester, 'claim', step, 'no reward is recorded now: waiting for its RewardClaimed event')
    if (reward.monitoringService.toLowerCase() !== chain.address.toLowerCase())
      return this.write(channel, requester, 'claim', 'due', {
        status: 'lost',
        note: `another service (${reward.monitoringService}) submitted a newer proof (nonce ${reward.nonce}): the reward is its`,
      })
    if (reward.rewardAmount === 0n) return this.write(channel, requester, 'claim', 'due', { status: 'nothing' })
    if (info.state === 'opened' || info.state === 'nonExistent') return this.note(channel, requester, 'claim', step, `the channel is ${info.state} on-chain`)
    if (info.state === 'closed' && info.settleBlockNumber >= latest)
      return this.note(channel, requester, 'claim', step, `waiting for block ${info.settleBlockNumber + 1n}`)

    const call = claimRewardCall(monitoringService, { tokenNetwork, channelId, closing: duty.closing, nonClosing: duty.nonClosing })
    if (!(await this.simulated(channel, requester, 'claim', step, call))) return
    await this.send(channel, requester, 'claim', call, { amount: reward.rewardAmount }, (blockNumber) => ({
      claim: { status: 'claimed', amount: reward.rewardAmount, blockNumber },
    }))
  }

  /** Simulates `call`: true if it would pass; otherwise the step waits (a "not yet" reason) or fails for good. */
  private async simulated(channel: WatchedChannel, requester: string, which: 'monitor' | 'claim', step: Step, call: ChainCall): Promise<boolean> {
    const simulation = await simulateCall(this.p.chain, call)
    if (simulation.ok) return true
    if (NOT_YET.some((r) => simulation.reason.includes(r))) await this.note(channel, requester, which, step, `the contract says: ${simulation.reason}`)
    else await this.write(channel, requester, which, 'due', { status: 'failed', note: `the contract refuses it: ${simulation.reason}` })
    return false
  }

  /**
   * Sends a simulated call: `sending` first (durable), `sent` with the hash once broadcast, then what the receipt says.
   * A failure before the broadcast takes the step back to `due` (it is looked at again at the next block).
   */
  private async send(
    channel: WatchedChannel,
    requester: string,
    which: 'monitor' | 'claim',
    call: ChainCall,
    fields: Partial<Step>,
    mined: (blockNumber: bigint) => Partial<Duty>,
    deadline?: bigint,
  ): Promise<void> {
    await this.write(channel, requester, which, 'due', { status: 'sending', ...fields })
    let hash: Hex | undefined
    try {
      const sent = await this.p.queue.send(call, {
        // The journal holds it under this key: a restart joins it rather than sending it again.
        key: stepKey(channel, requester, which),
        ...(deadline !== undefined ? { deadline } : {}),
        onSubmitted: async (submitted) => {
          hash = submitted.hash
          this.p.onSent?.(call.description, submitted.hash)
          await this.write(channel, requester, which, 'sending', { status: 'sent', transactionHash: submitted.hash })
        },
      })
      const done = mined(sent.receipt.blockNumber)
      await this.finish(channel, requester, which, sent.hash, done)
    } catch (error) {
      if (this.stopped) return
      if (hash === undefined) {
        // Not broadcast: the estimate refused it (the chain changed since the simulation) or the account lacks ETH.
        await this.write(channel, requester, which, 'sending', { status: 'due', note: `not sent: ${errorLine(error)}` })
        throw error
      }
      const reverted = (error as { code?: string }).code === 'TRANSACTION_REVERTED'
      if (reverted) await this.write(channel, requester, which, 'sent', { status: 'failed', note: errorLine(error) })
      else throw error
    }
  }

  /** Records a mined step (and what follows it), with its hash. */
  private async finish(channel: WatchedChannel, requester: string, which: 'monitor' | 'claim', hash: Hex, done: Partial<Duty>) {
    const { [which]: step, ...also } = done
    await this.write(channel, requester, which, 'sent', { ...step, transactionHash: hash }, which === 'monitor' ? also : undefined)
  }

  /**
   * A step that was `sending` or `sent` when the service stopped. With a hash: its receipt decides, or it is waited
   * for while the node still knows it, or (dropped) the step is due again. Without: it may or may not have been
   * broadcast, so the account's pending transactions are waited for first; then the step is due again, and the
   * chain (its nonce, NewBalanceProofReceived, RewardClaimed) says whether it went through.
   */
  private async resume(channel: WatchedChannel, requester: string, which: 'monitor' | 'claim', step: Step): Promise<void> {
    const { publicClient, address } = this.p.chain
    // The queue's journal still holds it (sent, replaced at a higher fee, or sent again after a drop): its outcome decides.
    const joined = this.p.queue.outcome(stepKey(channel, requester, which))
    if (joined) {
      const outcome = await joined.then(
        (sent) => ({ success: true, blockNumber: sent.receipt.blockNumber, hash: sent.hash }),
        (error: unknown) => {
          if ((error as { code?: string }).code !== 'TRANSACTION_REVERTED') throw error
          return { success: false, blockNumber: 0n, hash: (error as { hash?: Hex }).hash ?? step.transactionHash ?? ('0x' as Hex) }
        },
      )
      return this.resumed(channel, requester, which, step, outcome.success, outcome.blockNumber, outcome.hash)
    }
    if (step.status === 'sent' && step.transactionHash) {
      const hash = step.transactionHash
      const receipt = await publicClient.getTransactionReceipt({ hash }).catch((e: unknown) => {
        if (e instanceof TransactionReceiptNotFoundError) return undefined
        throw e
      })
      if (receipt) return this.resumed(channel, requester, which, step, receipt.status === 'success', receipt.blockNumber, hash)
      const pending = await publicClient.getTransaction({ hash }).catch((e: unknown) => {
        if (e instanceof TransactionNotFoundError) return undefined
        throw e
      })
      if (pending) {
        const mined = await waitForReceipt(publicClient, hash, { timeout: 300_000 })
        return this.resumed(channel, requester, which, step, mined.status === 'success', mined.blockNumber, hash)
      }
      return this.write(channel, requester, which, 'sent', { status: 'due', note: `transaction ${hash} was dropped; trying again` })
    }
    const [latestCount, pendingCount] = await Promise.all([
      publicClient.getTransactionCount({ address, blockTag: 'latest' }),
      publicClient.getTransactionCount({ address, blockTag: 'pending' }),
    ])
    if (pendingCount > latestCount) return // looked at again at the next block
    await this.write(channel, requester, which, step.status, { status: 'due', note: 'the service stopped while sending it: looking again' })
  }

  private async resumed(channel: WatchedChannel, requester: string, which: 'monitor' | 'claim', step: Step, success: boolean, blockNumber: bigint, hash: Hex) {
    if (!success) return this.write(channel, requester, which, 'sent', { status: 'failed', note: `transaction ${hash} reverted` })
    if (which === 'claim')
      return this.finish(channel, requester, 'claim', hash, { claim: { status: 'claimed', amount: (step as ClaimStep).amount, blockNumber } })
    const m = step as MonitorStep
    const reward = m.rewardAmount ?? 0n
    return this.finish(channel, requester, 'monitor', hash, {
      monitor: { status: 'done', ...(m.nonce !== undefined ? { nonce: m.nonce } : {}), rewardAmount: reward, blockNumber },
      claim: reward > 0n ? { status: 'due', amount: reward } : { status: 'nothing', amount: 0n },
    })
  }
}
