import { getContractAddress, keccak256, TransactionReceiptNotFoundError, type Address, type Hex } from 'viem'
import type { ChainClient } from '../chain/chainClient.ts'
import { ChainRpcError } from '../chain/errors.ts'
import type { TransactionJournal } from '../chain/transactionJournal.ts'
import type { SentTransaction, TransactionQueue } from '../chain/transactionQueue.ts'
import { codeHashes } from '../contracts/index.ts'
import { SluiceError } from '../errors.ts'
import type { DeployProgress, ProgressStore, StepRecord } from './deployProgress.ts'
import type { AddressOf, DeployParameters, DeployPlan, DeployStep, StepId } from './deployPlan.ts'

/**
 * Runs a deployment plan (deployPlan.ts) through the account's transaction queue, resumably
 * (docs/decisions/0050-sluice-deploy.md):
 *
 * - every step whose dependencies are on the chain is sent at once (the queue broadcasts them in order and awaits
 *   their receipts in parallel); the next wave goes once they are mined;
 * - as each transaction is broadcast, its nonce, hash and (for a creation) address go to the progress store;
 * - run again, it first waits for the deployer's transactions still in the pool, then takes as done what the chain
 *   shows done: the expected code at a recorded creation's address, or at the address of any nonce since the
 *   deployment began (a creation broadcast just before a crash, before its record was written); a call's effect
 *   (UserDeposit initialised, a token registered). Nothing is sent twice: a step is sent again only when the
 *   chain shows it not done and no transaction of the deployer is waiting to be mined;
 * - once all is mined it waits for the confirmations, then looks at every step again (a reorg may have undone one).
 */

/** A step failed: its transaction could not be sent or was reverted. */
export class DeployContractsError extends SluiceError {
  override name = 'DeployContractsError' as const
  override readonly code = 'DEPLOY_CONTRACTS' as const
  constructor(
    readonly step: string,
    message: string,
    options?: ErrorOptions,
  ) {
    super(`deploying ${step} failed: ${message}`, options)
  }
}

/** What the chain holds contradicts the deployment: another contract at a recorded address, other wiring, a tampered file. */
export class DeployConflictError extends SluiceError {
  override name = 'DeployConflictError' as const
  override readonly code = 'DEPLOY_CONFLICT' as const
  constructor(readonly problems: readonly string[]) {
    super(problems.join('; '))
  }
}

/** The progress found is another deployment's (another chain, deployer or parameters). */
export class DeployResumeMismatchError extends SluiceError {
  override name = 'DeployResumeMismatchError' as const
  override readonly code = 'DEPLOY_RESUME_MISMATCH' as const
  constructor(
    readonly field: string,
    readonly recorded: string,
    readonly given: string,
  ) {
    super(`the deployment under way was started with ${field} ${recorded}, not ${given}`)
  }
}

/** Transactions the deployer sent earlier stay in the pool, unmined, past the time allowed for them. */
export class PendingTransactionsError extends SluiceError {
  override name = 'PendingTransactionsError' as const
  override readonly code = 'DEPLOY_PENDING' as const
  constructor(
    readonly deployer: Address,
    readonly fromNonce: number,
    readonly toNonce: number,
    seconds: number,
  ) {
    super(
      `transactions of ${deployer} with nonces ${fromNonce}..${toNonce} were not mined within ${seconds} s: wait for them (or replace them with a higher fee) and run again`,
    )
  }
}

/** The chain made no block for a while: the confirmations cannot come. */
export class ChainStalledError extends SluiceError {
  override name = 'ChainStalledError' as const
  override readonly code = 'CHAIN_STALLED' as const
  constructor(
    readonly block: bigint,
    seconds: number,
  ) {
    super(`the chain made no block after ${block} for ${seconds} s, so the deployment cannot get its confirmations: run again once it does`)
  }
}

export type RunDeploymentParameters = {
  chain: ChainClient
  queue: TransactionQueue
  /**
   * The queue's journal, when it has one: a transaction it holds (signed, not yet mined) is the queue's to broadcast
   * again, so a step is never sent anew while its transaction is there.
   */
  journal?: TransactionJournal
  plan: DeployPlan
  progress: ProgressStore
  /** Blocks on top of the last transaction's block before the deployment counts as done; 0 by default. */
  confirmations?: number
  /** One line a step: sent, mined, found on the chain, waiting. */
  log?: (line: string) => void
  /** Called once every transaction of a wave is broadcast: an anvil that mines on an interval mines them at once. */
  afterBroadcast?: () => Promise<void>
  /**
   * The chain mines each transaction as it is broadcast (anvil's automine): a step goes as soon as its dependencies
   * are broadcast, rather than in waves of mined ones, and the whole deployment is one stream of transactions.
   */
  minedOnBroadcast?: boolean
  /**
   * Called once what the chain shows done is known, before anything is sent, with the steps left: the balance check
   * of `sluice deploy`, or its dry run, which answers 'stop' (then nothing is sent and the run resolves with `left`).
   */
  beforeSending?: (left: readonly DeployStep[]) => Promise<'send' | 'stop'>
  /** How long transactions sent before may stay in the pool before giving up; 10 minutes by default. */
  pendingTimeoutMs?: number
  /** How long the chain may make no block while confirmations are awaited; 2 minutes by default. */
  stallTimeoutMs?: number
}

export type DeploymentRun = {
  /** Every step's contract (or given) address, by step id. */
  addresses: ReadonlyMap<StepId, Address>
  /** The block each creation was mined in (or a lower bound for one found after a crash), by step id. */
  blocks: ReadonlyMap<StepId, number>
  /** Transactions this run sent. */
  sent: number
  /** Steps already done on the chain when this run began. */
  alreadyDone: StepId[]
  /** Steps not done: none, unless `beforeSending` stopped the run. */
  left: DeployStep[]
}

/** The parameters as the progress file keeps them: decimal strings, addresses as given, so they compare as JSON. */
export function describeParameters(parameters: DeployParameters): Record<string, unknown> {
  return JSON.parse(JSON.stringify(parameters, (_, v) => (typeof v === 'bigint' ? v.toString() : v))) as Record<string, unknown>
}

export async function runDeployment({
  chain,
  queue,
  journal,
  plan,
  progress: store,
  confirmations = 0,
  log = () => {},
  afterBroadcast,
  minedOnBroadcast = false,
  beforeSending,
  pendingTimeoutMs = 600_000,
  stallTimeoutMs = 120_000,
}: RunDeploymentParameters): Promise<DeploymentRun> {
  const client = chain.publicClient
  const deployer = chain.address
  const rpc = <T>(method: string, call: () => Promise<T>): Promise<T> =>
    call().catch((e: unknown) => {
      throw e instanceof SluiceError ? e : new ChainRpcError(method, e)
    })
  const sleep = () => new Promise((r) => setTimeout(r, client.pollingInterval))

  let resumed = false
  const progress = await startOrResume()
  // The queue resumes its journal here: it sends again what the chain lacks.
  await queue.start()
  const runStartBlock = Number(await rpc('eth_blockNumber', () => client.getBlockNumber()))
  const addressOf: AddressOf = (id) => {
    const address = plan.given.get(id) ?? progress.steps[id]?.address
    if (!address) throw new Error(`bug: ${id} has no address yet`)
    return address
  }
  const done = new Set<StepId>()
  const sentNow = new Set<StepId>()
  let sent = 0
  let alreadyDone: StepId[] = []

  for (let round = 0; ; round++) {
    await waitForEarlierTransactions()
    await findUnrecordedCreations()
    await lookAtChain()
    if (round === 0) {
      alreadyDone = [...done]
      if (resumed) log(`${done.size} of ${plan.steps.length} steps are done on the chain`)
      const left = plan.steps.filter((s) => !done.has(s.id))
      if (left.length > 0 && (await beforeSending?.(left)) === 'stop') return { addresses: new Map(plan.given), blocks: new Map(), sent, alreadyDone, left }
    }
    await sendWhatIsLeft()
    if (confirmations === 0) break
    await waitForConfirmations()
    // A reorg while the confirmations came may have undone a step: look again, and go on if it did.
    done.clear()
    await lookAtChain()
    if (done.size === plan.steps.length) break
    if (round >= 3)
      throw new DeployConflictError([`steps kept being undone on the chain (reorgs?): ${plan.steps.filter((s) => !done.has(s.id)).map((s) => s.id)}`])
    log(`a reorg undid ${plan.steps.length - done.size} steps: looking again once the transactions under way are mined`)
  }

  const blocks = new Map<StepId, number>()
  for (const step of plan.steps) {
    const record = progress.steps[step.id]
    if (step.kind === 'create' && record) blocks.set(step.id, record.blockNumber ?? record.sentAtBlock)
  }
  const addresses = new Map<StepId, Address>(plan.given)
  for (const step of plan.steps) if (step.kind === 'create') addresses.set(step.id, addressOf(step.id))
  return { addresses, blocks, sent, alreadyDone, left: [] }

  async function startOrResume(): Promise<DeployProgress> {
    const parameters = describeParameters(plan.parameters)
    const found = await store.load()
    if (found) {
      if (found.chainId !== chain.chainId) throw new DeployResumeMismatchError('chain id', String(found.chainId), String(chain.chainId))
      if (found.deployer.toLowerCase() !== deployer.toLowerCase()) throw new DeployResumeMismatchError('the deployer', found.deployer, deployer)
      const recorded = JSON.stringify(found.parameters)
      if (recorded !== JSON.stringify(parameters)) {
        const key = Object.keys(parameters).find((k) => JSON.stringify(found.parameters[k]) !== JSON.stringify(parameters[k])) ?? 'other parameters'
        throw new DeployResumeMismatchError(key, JSON.stringify(found.parameters[key]), JSON.stringify(parameters[key]))
      }
      log(`continuing the deployment begun at block ${found.startBlock} (nonce ${found.startNonce})`)
      resumed = true
      return found
    }
    const [startNonce, startBlock] = await Promise.all([
      rpc('eth_getTransactionCount', () => client.getTransactionCount({ address: deployer, blockTag: 'latest' })),
      rpc('eth_blockNumber', () => client.getBlockNumber()),
    ])
    // Kept once the first transaction is about to go (sendWhatIsLeft): a run that sends nothing leaves nothing behind.
    return { version: 1, chainId: chain.chainId, deployer, parameters, startNonce, startBlock: Number(startBlock), steps: {} }
  }

  /**
   * The deployer's transactions still in the pool, or in the queue's journal and not mined (the queue broadcasts
   * those again), are mined before anything is decided: a step is sent anew only when none of them can still be it.
   */
  async function waitForEarlierTransactions(): Promise<void> {
    const since = Date.now()
    let said = false
    for (;;) {
      const [mined, pending, journaled] = await Promise.all([
        rpc('eth_getTransactionCount', () => client.getTransactionCount({ address: deployer, blockTag: 'latest' })),
        rpc('eth_getTransactionCount', () => client.getTransactionCount({ address: deployer, blockTag: 'pending' })),
        journal ? journal.load() : [],
      ])
      const last = Math.max(pending - 1, ...journaled.map((e) => e.nonce))
      if (last < mined) return
      if (!said) log(`waiting for the transactions of ${deployer} sent before (nonces ${mined}..${last}) to be mined`)
      said = true
      if (Date.now() - since > pendingTimeoutMs) throw new PendingTransactionsError(deployer, mined, last, Math.round(pendingTimeoutMs / 1000))
      await sleep()
    }
  }

  /** A creation broadcast just before a crash has no record: it is found by the code at the address of its nonce. */
  async function findUnrecordedCreations(): Promise<void> {
    const mined = await rpc('eth_getTransactionCount', () => client.getTransactionCount({ address: deployer, blockTag: 'latest' }))
    const recordedNonces = new Set(Object.values(progress.steps).map((r) => r.nonce))
    for (let nonce = progress.startNonce; nonce < mined; nonce++) {
      if (recordedNonces.has(nonce)) continue
      const address = getContractAddress({ from: deployer, nonce: BigInt(nonce) })
      const code = await rpc('eth_getCode', () => client.getCode({ address }))
      if (!code || code === '0x') continue
      const hash = keccak256(code)
      for (const step of plan.steps) {
        if (step.kind !== 'create' || codeHashes[step.contract] !== hash) continue
        const record = progress.steps[step.id]
        if (record?.address && (await codeAt(record.address)) !== undefined) continue
        const problems = await step.check(client, address, addressOf).catch(() => ['its dependencies are not known'])
        if (problems.length > 0) continue
        progress.steps[step.id] = { nonce, address, sentAtBlock: progress.startBlock }
        await store.save(progress)
        log(`${step.id}: found at ${address} (nonce ${nonce}), sent before the last run stopped`)
        break
      }
    }
  }

  async function codeAt(address: Address): Promise<Hex | undefined> {
    const code = await rpc('eth_getCode', () => client.getCode({ address }))
    return code && code !== '0x' ? code : undefined
  }

  /** Marks done every step the chain shows done; throws DeployConflictError when it shows something else. */
  async function lookAtChain(): Promise<void> {
    for (const step of plan.steps) {
      if (done.has(step.id) || !step.needs.every((n) => done.has(n) || plan.given.has(n))) continue
      if (await isDone(step)) done.add(step.id)
    }
  }

  async function isDone(step: DeployStep): Promise<boolean> {
    const record = progress.steps[step.id]
    if (step.kind === 'call') {
      const { done: made, problems } = await rpc(`reading ${step.id}`, () => step.state(client, addressOf))
      if (problems.length > 0) throw new DeployConflictError(problems)
      if (made && record && record.blockNumber === undefined) await learnBlock(record)
      return made
    }
    if (!record?.address) return false
    const code = await codeAt(record.address)
    if (!code) {
      if (record.hash) log(`${step.id}: its transaction ${record.hash} (nonce ${record.nonce}) created nothing at ${record.address}; it is sent again`)
      return false
    }
    if (keccak256(code) !== codeHashes[step.contract])
      throw new DeployConflictError([`the code at ${record.address} (${step.id}, nonce ${record.nonce}) is not ${step.contract}'s`])
    const problems = await rpc(`reading ${step.id}`, () => step.check(client, record.address!, addressOf))
    if (problems.length > 0) throw new DeployConflictError(problems)
    if (record.blockNumber === undefined) await learnBlock(record)
    return true
  }

  /** The block of a transaction broadcast before a crash and mined since, from its receipt (if its hash is the one mined). */
  async function learnBlock(record: StepRecord): Promise<void> {
    if (!record.hash) return
    try {
      const receipt = await client.getTransactionReceipt({ hash: record.hash })
      record.blockNumber = Number(receipt.blockNumber)
      await store.save(progress)
    } catch (e) {
      // Replaced by a re-priced one, or dropped: the block it was sent at stays the lower bound.
      if (!(e instanceof TransactionReceiptNotFoundError)) throw new ChainRpcError('eth_getTransactionReceipt', e)
    }
  }

  async function sendWhatIsLeft(): Promise<void> {
    if (plan.steps.some((s) => !done.has(s.id))) await store.save(progress)
    for (;;) {
      const left = plan.steps.filter((s) => !done.has(s.id))
      if (left.length === 0) return
      const head = Number(await rpc('eth_blockNumber', () => client.getBlockNumber()))
      const wave = await sendWave(left, head)
      if (wave.length === 0) throw new Error(`bug: no step can go, ${left.map((s) => s.id)} wait`)
      // Mined without a revert: a call is done; a creation must have left the expected code (its wiring is what we sent).
      for (const step of wave) {
        const address = progress.steps[step.id]?.address
        if (step.kind === 'create' && (!address || keccak256((await codeAt(address)) ?? '0x') !== codeHashes[step.contract]))
          throw new DeployContractsError(step.id, `mined, but ${address} holds no ${step.contract} code`)
        done.add(step.id)
      }
    }
  }

  /**
   * Sends every step of `left` whose dependencies are done, and awaits them all; with `minedOnBroadcast`, also each
   * step whose dependencies are broadcast, as they are. Returns the steps sent; throws the first failure (in plan
   * order) once every transaction sent is settled, so that each is recorded.
   */
  async function sendWave(left: readonly DeployStep[], head: number): Promise<DeployStep[]> {
    const broadcastNow = new Set<StepId>()
    const ready = (s: DeployStep) => s.needs.every((n) => done.has(n) || plan.given.has(n) || (minedOnBroadcast && broadcastNow.has(n)))
    const first = left.filter(ready)
    let toBroadcast = first.length
    let allBroadcast!: () => void
    const mining = new Promise<void>((resolve) => (allBroadcast = resolve)).then(() => afterBroadcast?.())
    const launched = new Map<StepId, Promise<SentTransaction>>()
    const launch = (steps: readonly DeployStep[]) => {
      for (const step of steps)
        launched.set(
          step.id,
          send(step, head, (broadcast) => {
            if (broadcast) broadcastNow.add(step.id)
            if (first.includes(step) && --toBroadcast === 0) allBroadcast()
            // A step whose dependencies are now all broadcast goes too, on a chain that mines each transaction as it comes.
            if (broadcast && minedOnBroadcast) launch(left.filter((s) => !launched.has(s.id) && ready(s)))
          }),
        )
    }
    if (first.length === 0) return []
    launch(first)
    // Steps launched while others were being sent join the wait.
    for (let settled = 0; settled < launched.size; ) {
      settled = launched.size
      await Promise.allSettled([...launched.values()])
    }
    await mining
    const wave = left.filter((s) => launched.has(s.id))
    for (const step of wave) {
      const failure = await launched.get(step.id)!.then(
        () => undefined,
        (e: unknown) => e,
      )
      if (failure === undefined) continue
      const message = (failure as { shortMessage?: string }).shortMessage ?? (failure instanceof Error ? failure.message : String(failure))
      throw new DeployContractsError(step.id, message, { cause: failure })
    }
    return wave
  }

  /** Sends a step; `told(broadcast)` is called once: when it is broadcast (true), or when it failed before (false). */
  async function send(step: DeployStep, head: number, told: (broadcast: boolean) => void): Promise<SentTransaction> {
    const call =
      step.kind === 'create'
        ? { data: step.data(addressOf), description: `create ${step.id}` }
        : { to: step.to(addressOf), data: step.data(addressOf), description: step.id }
    let telling = true
    const tell = (broadcast: boolean) => {
      if (telling) told(broadcast)
      telling = false
    }
    const options = {
      // Under this key, the queue joins a transaction of the step still in its journal instead of sending another.
      key: `deploy ${step.id}`,
      onSubmitted: async ({ hash, nonce }: { hash: Hex; nonce: number }) => {
        const address = step.kind === 'create' ? getContractAddress({ from: deployer, nonce: BigInt(nonce) }) : undefined
        const again = sentNow.has(step.id)
        progress.steps[step.id] = { nonce, hash, ...(address ? { address } : {}), sentAtBlock: head }
        if (!again) sent++
        sentNow.add(step.id)
        tell(true)
        await store.save(progress)
        log(again ? `${step.id}: sent again as ${hash} (nonce ${nonce})` : `${step.id}: sent ${hash} (nonce ${nonce})${address ? `, creating ${address}` : ''}`)
      },
    }
    try {
      const result = await queue.send(call, options)
      tell(true)
      progress.steps[step.id]!.blockNumber = Number(result.receipt.blockNumber)
      await store.save(progress)
      log(`${step.id}: mined in block ${result.receipt.blockNumber}`)
      return result
    } finally {
      tell(false)
    }
  }

  async function waitForConfirmations(): Promise<void> {
    const mined = plan.steps.map((s) => progress.steps[s.id]?.blockNumber)
    // A step found done without a receipt of ours was mined before this run began.
    const last = Math.max(runStartBlock, ...mined.filter((b) => b !== undefined))
    const target = BigInt(last + confirmations)
    let head = await rpc('eth_blockNumber', () => client.getBlockNumber())
    if (head >= target) return
    log(`waiting for ${confirmations} confirmations: block ${head} of ${target}`)
    let movedAt = Date.now()
    let saidAt = Date.now()
    while (head < target) {
      await sleep()
      const now = await rpc('eth_blockNumber', () => client.getBlockNumber())
      const moved = now !== head
      if (moved) movedAt = Date.now()
      else if (Date.now() - movedAt > stallTimeoutMs) throw new ChainStalledError(head, Math.round(stallTimeoutMs / 1000))
      head = now
      // A line every 10 s at most: on a chain of 12-second blocks, one a block.
      if (moved && head < target && Date.now() - saidAt >= 10_000) {
        log(`block ${head} of ${target}`)
        saidAt = Date.now()
      }
    }
  }
}
