import { waitForReceipt } from '../../src/chain/receipt.ts'
// Fixtures for the channel contracts on a real anvil: deploy SecretRegistry + token + registry + one
// TokenNetwork, open and fund channels, sign the docs/protocol.md §2 messages with src/protocol, and drive a channel through
// close / update / settle / unlock. No vitest imports: bench/ reuses this module under tsx.
import {
  BaseError,
  concatHex,
  decodeErrorResult,
  encodeDeployData,
  getAddress,
  keccak256,
  numberToHex,
  maxUint256,
  parseEventLogs,
  sliceHex,
  toHex,
  type Abi,
  type Address,
  type ContractConstructorArgs,
  type ContractEventName,
  type ContractFunctionArgs,
  type ContractFunctionName,
  type Hex,
  type TransactionReceipt,
} from 'viem'
import { CustomToken, SecretRegistry, TokenNetwork, TokenNetworkRegistry, bytecode } from '../../src/contracts/index.ts'
import { anvilKeys, startAnvil, type Anvil } from '../../src/devnet/anvil.ts'
import { ZERO_HASH, balanceHash, packBalanceProof, packBalanceProofCounter } from '../../src/protocol/balanceProof.ts'
import { encodeLocks, locksroot, secrethashOf, type Lock, LOCKSROOT_OF_NO_LOCKS } from '../../src/protocol/locks.ts'
import { MessageTypeId } from '../../src/protocol/messageTypeId.ts'
import { signPacked } from '../../src/protocol/signature.ts'
import { packWithdraw } from '../../src/protocol/withdrawProof.ts'
import { anvilClient, type AnvilClient } from './clients.ts'
import { deploy } from './deploy.ts'
import { jsSecp256k1 } from '../../src/protocol/secp256k1.ts'

/** The settle timeout bounds raiden-contracts' tests deploy with (blocks). */
export const SETTLE_TIMEOUT_MIN = 5n
export const SETTLE_TIMEOUT_MAX = 100_000n
export const DEFAULT_SETTLE_TIMEOUT = 10n
export const MAX_UINT256 = maxUint256
export const ZERO: Hex = ZERO_HASH
/** A 65-byte signature of zeros: what the Python node passes as the partner's signature when closing with nonce 0. */
export const EMPTY_SIGNATURE: Hex = `0x${'00'.repeat(65)}`

export type Party = { key: Hex; address: Address; client: AnvilClient }

export type Contracts = {
  secretRegistry: Address
  registry: Address
  token: Address
  tokenNetwork: Address
}

export type ChainFixture = Contracts & {
  anvil: Anvil
  /** anvil key 0: deployer and controller of the registry and its token networks. */
  controller: Party
  /** anvil keys 1..9: channel participants and third parties. */
  parties: Party[]
  chainId: bigint
  stop(): Promise<void>
}

export type DeployOptions = {
  participantDepositLimit?: bigint
  networkDepositLimit?: bigint
  maxTokenNetworks?: bigint
}

export function party(rpcUrl: string, key: Hex): Party {
  const client = anvilClient(rpcUrl, key)
  return { key, address: client.account.address, client }
}

/** Throws unless the transaction was mined successfully; returns its receipt. */
export async function mined(client: AnvilClient, hash: Hex): Promise<TransactionReceipt> {
  const receipt = await waitForReceipt(client, hash, { timeout: 20_000, pollingInterval: 5 })
  if (receipt.status !== 'success') throw new Error(`transaction ${hash} reverted`)
  return receipt
}

/** Deploys SecretRegistry, a CustomToken, a TokenNetworkRegistry (timeouts 5..100000) and the token's TokenNetwork. */
export async function deployContracts(client: AnvilClient, options: DeployOptions = {}): Promise<Contracts> {
  const secretRegistry = getAddress(await deploy(client, SecretRegistry, []))
  const token = getAddress(await deploy(client, CustomToken, [10n ** 30n, 18, 'Test Token', 'TTT']))
  const registry = getAddress(
    await deploy(client, TokenNetworkRegistry, [secretRegistry, SETTLE_TIMEOUT_MIN, SETTLE_TIMEOUT_MAX, options.maxTokenNetworks ?? 10n]),
  )
  const tokenNetwork = await createTokenNetwork(client, registry, token, options)
  return { secretRegistry, registry, token, tokenNetwork }
}

/** Registers `token` in the registry and returns its new TokenNetwork. Unlimited deposits unless limits are given. */
export async function createTokenNetwork(client: AnvilClient, registry: Address, token: Address, limits: DeployOptions = {}): Promise<Address> {
  const receipt = await mined(
    client,
    await client.writeContract({
      address: registry,
      abi: TokenNetworkRegistry.abi,
      functionName: 'createERC20TokenNetwork',
      args: [token, limits.participantDepositLimit ?? MAX_UINT256, limits.networkDepositLimit ?? MAX_UINT256],
    }),
  )
  const [created] = parseEventLogs({ abi: TokenNetworkRegistry.abi, eventName: 'TokenNetworkCreated', logs: receipt.logs })
  if (!created) throw new Error('no TokenNetworkCreated event')
  return created.args.token_network_address
}

/** Starts anvil and deploys everything. Call `stop()` in afterAll. */
export async function startChain(options: DeployOptions = {}): Promise<ChainFixture> {
  const anvil = await startAnvil()
  const controller = party(anvil.rpcUrl, anvilKeys[0])
  const parties = anvilKeys.slice(1).map((key) => party(anvil.rpcUrl, key))
  const contracts = await deployContracts(controller.client, options)
  const chainId = BigInt(await controller.client.getChainId())
  return { ...contracts, anvil, controller, parties, chainId, stop: () => anvil.stop() }
}

// ---------------------------------------------------------------------------------------------- calls

type TokenNetworkAbi = typeof TokenNetwork.abi
type TokenNetworkWrite = ContractFunctionName<TokenNetworkAbi, 'nonpayable' | 'payable'>

/** eth_call of a TokenNetwork function as `who` (evaluated in the latest block); use with expectRevert. */
export function simulateTokenNetwork<F extends TokenNetworkWrite>(
  fx: ChainFixture,
  who: Party,
  functionName: F,
  args: ContractFunctionArgs<TokenNetworkAbi, 'nonpayable' | 'payable', F>,
  address: Address = fx.tokenNetwork,
): Promise<unknown> {
  return who.client.simulateContract({ address, abi: TokenNetwork.abi, functionName, args } as never)
}

/** Sends a TokenNetwork transaction as `who` and waits for it; throws if it reverts. */
export async function sendTokenNetwork<F extends TokenNetworkWrite>(
  fx: ChainFixture,
  who: Party,
  functionName: F,
  args: ContractFunctionArgs<TokenNetworkAbi, 'nonpayable' | 'payable', F>,
  address: Address = fx.tokenNetwork,
): Promise<TransactionReceipt> {
  return mined(who.client, await who.client.writeContract({ address, abi: TokenNetwork.abi, functionName, args } as never))
}

/** The decoded TokenNetwork events of a receipt with the given name. */
export function tokenNetworkEvents<E extends ContractEventName<TokenNetworkAbi>>(receipt: TransactionReceipt, eventName: E) {
  return parseEventLogs({ abi: TokenNetwork.abi, eventName, logs: receipt.logs })
}

// ---------------------------------------------------------------------------------------------- reads

export async function tokenBalance(fx: ChainFixture, who: Address): Promise<bigint> {
  return fx.controller.client.readContract({ address: fx.token, abi: CustomToken.abi, functionName: 'balanceOf', args: [who] })
}

export type ParticipantInfo = {
  deposit: bigint
  withdrawnAmount: bigint
  isTheCloser: boolean
  balanceHash: Hex
  nonce: bigint
  locksroot: Hex
  lockedAmount: bigint
}

export async function participantInfo(fx: ChainFixture, channelId: bigint, participant: Address, partner: Address): Promise<ParticipantInfo> {
  const [deposit, withdrawnAmount, isTheCloser, bh, nonce, root, lockedAmount] = await fx.controller.client.readContract({
    address: fx.tokenNetwork,
    abi: TokenNetwork.abi,
    functionName: 'getChannelParticipantInfo',
    args: [channelId, participant, partner],
  })
  return { deposit, withdrawnAmount, isTheCloser, balanceHash: bh, nonce, locksroot: root, lockedAmount }
}

export const ChannelState = { NonExistent: 0, Opened: 1, Closed: 2, Settled: 3, Removed: 4 } as const

export async function channelInfo(fx: ChainFixture, channelId: bigint, p1: Address, p2: Address) {
  const [settleBlockNumber, state] = await fx.controller.client.readContract({
    address: fx.tokenNetwork,
    abi: TokenNetwork.abi,
    functionName: 'getChannelInfo',
    args: [channelId, p1, p2],
  })
  return { settleBlockNumber, state }
}

export async function blockNumber(fx: ChainFixture): Promise<bigint> {
  return fx.controller.client.getBlockNumber({ cacheTime: 0 })
}

/** Mines empty blocks until the latest block is `target` (no-op if already there or past). */
export async function mineTo(fx: ChainFixture, target: bigint): Promise<void> {
  const now = await blockNumber(fx)
  if (target > now) await fx.controller.client.mine({ blocks: Number(target - now) })
}

// ---------------------------------------------------------------------------------------------- open / deposit

export async function mintAndApprove(fx: ChainFixture, who: Party, amount: bigint, spender: Address = fx.tokenNetwork): Promise<void> {
  await mined(who.client, await who.client.writeContract({ address: fx.token, abi: CustomToken.abi, functionName: 'mint', args: [amount] }))
  await mined(who.client, await who.client.writeContract({ address: fx.token, abi: CustomToken.abi, functionName: 'approve', args: [spender, amount] }))
}

/** Opens a channel between `a` and `b` (sent by `a`) and returns its id. */
export async function openChannel(fx: ChainFixture, a: Party, b: Party, settleTimeout = DEFAULT_SETTLE_TIMEOUT): Promise<bigint> {
  const receipt = await mined(
    a.client,
    await a.client.writeContract({ address: fx.tokenNetwork, abi: TokenNetwork.abi, functionName: 'openChannel', args: [a.address, b.address, settleTimeout] }),
  )
  const [opened] = parseEventLogs({ abi: TokenNetwork.abi, eventName: 'ChannelOpened', logs: receipt.logs })
  if (!opened) throw new Error('no ChannelOpened event')
  return opened.args.channel_identifier
}

/** Sets `who`'s total deposit, minting and approving what `payer` (default: `who`) needs first. */
export async function deposit(fx: ChainFixture, channelId: bigint, who: Party, total: bigint, partner: Party, payer: Party = who): Promise<TransactionReceipt> {
  const current = (await participantInfo(fx, channelId, who.address, partner.address)).deposit
  if (total > current) await mintAndApprove(fx, payer, total - current)
  return mined(
    payer.client,
    await payer.client.writeContract({
      address: fx.tokenNetwork,
      abi: TokenNetwork.abi,
      functionName: 'setTotalDeposit',
      args: [channelId, who.address, total, partner.address],
    }),
  )
}

/** Opens a channel and funds both sides (zero deposits are skipped). */
export async function openFundedChannel(
  fx: ChainFixture,
  a: Party,
  b: Party,
  depositA: bigint,
  depositB: bigint,
  settleTimeout = DEFAULT_SETTLE_TIMEOUT,
): Promise<bigint> {
  const channelId = await openChannel(fx, a, b, settleTimeout)
  if (depositA > 0n) await deposit(fx, channelId, a, depositA, b)
  if (depositB > 0n) await deposit(fx, channelId, b, depositB, a)
  return channelId
}

// ---------------------------------------------------------------------------------------------- signed messages

/** The fields of a balance proof that identify where it is valid; tests flip them to show a signature is bound to them. */
export type ProofDomain = { tokenNetwork: Address; chainId: bigint; channelId: bigint }

export type BalanceProofData = {
  nonce: bigint
  transferred: bigint
  locked: bigint
  locksroot: Hex
  additionalHash: Hex
}

export type SignedBalanceProof = BalanceProofData & ProofDomain & { balanceHash: Hex; signature: Hex; signer: Address }

/** Packs and signs a balance proof (docs/protocol.md §2.4). `domain` overrides let a test sign for another channel, chain or contract. */
export async function signBalanceProof(
  fx: ChainFixture,
  signer: Party,
  channelId: bigint,
  data: Partial<BalanceProofData> & { nonce: bigint },
  domain: Partial<ProofDomain> = {},
): Promise<SignedBalanceProof> {
  const full: BalanceProofData = {
    transferred: 0n,
    locked: 0n,
    locksroot: LOCKSROOT_OF_NO_LOCKS,
    additionalHash: keccak256(toHex(`message ${data.nonce}`)),
    ...data,
  }
  const bh = balanceHash({ transferredAmount: full.transferred, lockedAmount: full.locked, locksroot: full.locksroot })
  const d: ProofDomain = { tokenNetwork: fx.tokenNetwork, chainId: fx.chainId, channelId, ...domain }
  const signature = await signPacked(
    jsSecp256k1,
    signer.key,
    packBalanceProof({
      tokenNetworkAddress: d.tokenNetwork,
      chainId: d.chainId,
      channelIdentifier: d.channelId,
      balanceHash: bh,
      nonce: full.nonce,
      additionalHash: full.additionalHash,
    }),
  )
  // The domain recorded is the real one the proof is submitted to, whatever was signed.
  return { ...full, tokenNetwork: fx.tokenNetwork, chainId: fx.chainId, channelId, balanceHash: bh, signature, signer: signer.address }
}

/** The 277-byte counter-signature (docs/protocol.md §2.5) over a balance proof and its signature. */
export async function signCounter(
  signer: Party,
  type: typeof MessageTypeId.BalanceProof | typeof MessageTypeId.BalanceProofUpdate,
  proof: { tokenNetwork: Address; chainId: bigint; channelId: bigint; balanceHash: Hex; nonce: bigint; additionalHash: Hex },
  proofSignature: Hex,
): Promise<Hex> {
  return signPacked(
    jsSecp256k1,
    signer.key,
    packBalanceProofCounter(
      type,
      {
        tokenNetworkAddress: proof.tokenNetwork,
        chainId: proof.chainId,
        channelIdentifier: proof.channelId,
        balanceHash: proof.balanceHash,
        nonce: proof.nonce,
        additionalHash: proof.additionalHash,
      },
      proofSignature,
    ),
  )
}

export type WithdrawMessage = { channelId: bigint; participant: Address; totalWithdraw: bigint; expiration: bigint }

/** Signs the 200-byte withdraw message (docs/protocol.md §2.6). */
export async function signWithdraw(fx: ChainFixture, signer: Party, w: WithdrawMessage, domain: Partial<Omit<ProofDomain, 'channelId'>> = {}): Promise<Hex> {
  return signPacked(
    jsSecp256k1,
    signer.key,
    packWithdraw({
      tokenNetworkAddress: domain.tokenNetwork ?? fx.tokenNetwork,
      chainId: domain.chainId ?? fx.chainId,
      channelIdentifier: w.channelId,
      participant: w.participant,
      totalWithdraw: w.totalWithdraw,
      expiration: w.expiration,
    }),
  )
}

/** Sets a signature's v byte (the last one). */
export function withV(signature: Hex, v: number): Hex {
  return concatHex([sliceHex(signature, 0, 64), numberToHex(v, { size: 1 })])
}

// ---------------------------------------------------------------------------------------------- withdraw

export type WithdrawInput = {
  participant: Address
  total_withdraw: bigint
  expiration_block: bigint
  participant_signature: Hex
  partner_signature: Hex
}

/** A withdraw signed by both participants, as the `WithdrawInput` tuple. Expires 50 blocks ahead unless given. */
export async function withdrawInput(
  fx: ChainFixture,
  channelId: bigint,
  participant: Party,
  partner: Party,
  totalWithdraw: bigint,
  expiration?: bigint,
): Promise<WithdrawInput> {
  const expiration_block = expiration ?? (await blockNumber(fx)) + 50n
  const message = { channelId, participant: participant.address, totalWithdraw, expiration: expiration_block }
  return {
    participant: participant.address,
    total_withdraw: totalWithdraw,
    expiration_block,
    participant_signature: await signWithdraw(fx, participant, message),
    partner_signature: await signWithdraw(fx, partner, message),
  }
}

export async function withdraw(
  fx: ChainFixture,
  channelId: bigint,
  participant: Party,
  partner: Party,
  totalWithdraw: bigint,
  sender: Party = participant,
): Promise<TransactionReceipt> {
  const w = await withdrawInput(fx, channelId, participant, partner, totalWithdraw)
  return mined(
    sender.client,
    await sender.client.writeContract({
      address: fx.tokenNetwork,
      abi: TokenNetwork.abi,
      functionName: 'setTotalWithdraw',
      args: [channelId, w.participant, w.total_withdraw, w.expiration_block, w.participant_signature, w.partner_signature],
    }),
  )
}

// ---------------------------------------------------------------------------------------------- close / update

/** The arguments of closeChannel: `closer` closes with `proof` (signed by its partner), or with nonce 0 when no proof. */
export async function closeArgs(fx: ChainFixture, channelId: bigint, closer: Party, partner: Party, proof?: SignedBalanceProof) {
  const bp = proof ?? {
    tokenNetwork: fx.tokenNetwork,
    chainId: fx.chainId,
    channelId,
    balanceHash: ZERO_HASH,
    nonce: 0n,
    additionalHash: ZERO_HASH,
    signature: EMPTY_SIGNATURE,
  }
  const closingSignature = await signCounter(closer, MessageTypeId.BalanceProof, bp, bp.signature)
  return [channelId, partner.address, closer.address, bp.balanceHash, bp.nonce, bp.additionalHash, bp.signature, closingSignature] as const
}

export async function closeChannel(
  fx: ChainFixture,
  channelId: bigint,
  closer: Party,
  partner: Party,
  proof?: SignedBalanceProof,
  sender: Party = closer,
): Promise<TransactionReceipt> {
  const args = await closeArgs(fx, channelId, closer, partner, proof)
  return mined(sender.client, await sender.client.writeContract({ address: fx.tokenNetwork, abi: TokenNetwork.abi, functionName: 'closeChannel', args }))
}

/** The arguments of updateNonClosingBalanceProof: `nonCloser` submits the closer's `proof`, counter-signed (type 2). */
export async function updateArgs(_fx: ChainFixture, channelId: bigint, closer: Party, nonCloser: Party, proof: SignedBalanceProof) {
  const nonClosingSignature = await signCounter(nonCloser, MessageTypeId.BalanceProofUpdate, proof, proof.signature)
  return [channelId, closer.address, nonCloser.address, proof.balanceHash, proof.nonce, proof.additionalHash, proof.signature, nonClosingSignature] as const
}

export async function updateNonClosingBalanceProof(
  fx: ChainFixture,
  channelId: bigint,
  closer: Party,
  nonCloser: Party,
  proof: SignedBalanceProof,
  sender: Party = nonCloser,
): Promise<TransactionReceipt> {
  const args = await updateArgs(fx, channelId, closer, nonCloser, proof)
  return mined(
    sender.client,
    await sender.client.writeContract({ address: fx.tokenNetwork, abi: TokenNetwork.abi, functionName: 'updateNonClosingBalanceProof', args }),
  )
}

// ---------------------------------------------------------------------------------------------- settle / unlock

/** What one side's stored balance hash commits to, as settleChannel takes it. */
export type SettleSide = { participant: Address; transferred: bigint; locked: bigint; locksroot: Hex }

export function settleSide(participant: Party | Address, proof?: Pick<BalanceProofData, 'transferred' | 'locked' | 'locksroot'>): SettleSide {
  return {
    participant: typeof participant === 'string' ? participant : participant.address,
    transferred: proof?.transferred ?? 0n,
    locked: proof?.locked ?? 0n,
    locksroot: proof?.locksroot ?? ZERO_HASH,
  }
}

function saturatingAdd(a: bigint, b: bigint): bigint {
  return a + b > MAX_UINT256 ? MAX_UINT256 : a + b
}

/** Puts the side with the smaller transferred + locked (saturating) first, as settleChannel requires. */
export function orderSides(a: SettleSide, b: SettleSide): [SettleSide, SettleSide] {
  return saturatingAdd(a.transferred, a.locked) <= saturatingAdd(b.transferred, b.locked) ? [a, b] : [b, a]
}

export function settleArgs(channelId: bigint, first: SettleSide, second: SettleSide) {
  return [
    channelId,
    first.participant,
    first.transferred,
    first.locked,
    first.locksroot,
    second.participant,
    second.transferred,
    second.locked,
    second.locksroot,
  ] as const
}

export type Settlement = { receipt: TransactionReceipt; first: SettleSide; second: SettleSide; amount1: bigint; amount2: bigint }

/** Settles with the sides in the required order (sent by `sender`, default the first party); returns the payouts of the event. */
export async function settleChannel(fx: ChainFixture, channelId: bigint, a: SettleSide, b: SettleSide, sender: Party = fx.parties[0]!): Promise<Settlement> {
  const [first, second] = orderSides(a, b)
  const receipt = await mined(
    sender.client,
    await sender.client.writeContract({
      address: fx.tokenNetwork,
      abi: TokenNetwork.abi,
      functionName: 'settleChannel',
      args: settleArgs(channelId, first, second),
    }),
  )
  const [settled] = parseEventLogs({ abi: TokenNetwork.abi, eventName: 'ChannelSettled', logs: receipt.logs })
  if (!settled) throw new Error('no ChannelSettled event')
  return { receipt, first, second, amount1: settled.args.participant1_amount, amount2: settled.args.participant2_amount }
}

/**
 * Mines past the settle window of a closed channel: afterwards the latest block is the first one in which settle
 * is allowed, so both an eth_call (run in the latest block on anvil) and the next transaction may settle.
 */
export async function passSettleWindow(fx: ChainFixture, channelId: bigint, p1: Address, p2: Address): Promise<void> {
  const { settleBlockNumber } = await channelInfo(fx, channelId, p1, p2)
  await mineTo(fx, settleBlockNumber + 1n)
}

export async function registerSecrets(fx: ChainFixture, secrets: Hex[], sender: Party = fx.parties[8]!): Promise<TransactionReceipt> {
  return mined(
    sender.client,
    await sender.client.writeContract({ address: fx.secretRegistry, abi: SecretRegistry.abi, functionName: 'registerSecretBatch', args: [secrets] }),
  )
}

export async function unlock(
  fx: ChainFixture,
  channelId: bigint,
  receiver: Address,
  sender: Address,
  locks: readonly Lock[],
  caller: Party = fx.parties[8]!,
): Promise<TransactionReceipt> {
  return mined(
    caller.client,
    await caller.client.writeContract({
      address: fx.tokenNetwork,
      abi: TokenNetwork.abi,
      functionName: 'unlock',
      args: [channelId, receiver, sender, encodeLocks(locks)],
    }),
  )
}

/** A deterministic 32-byte secret and its lock. */
export function secretFor(label: string): { secret: Hex; secrethash: Hex } {
  const secret = keccak256(toHex(label))
  return { secret, secrethash: secrethashOf(secret) }
}

export type SettledChannelWithLocks = {
  channelId: bigint
  sender: Party
  receiver: Party
  locks: Lock[]
  secrets: Hex[]
  /** What unlock must pay the receiver and return to the sender. */
  claimable: bigint
  unclaimable: bigint
  encodedLocks: Hex
}

/**
 * Builds a settled channel whose sender has `count` pending locks towards the receiver, ready for `unlock`:
 * opens a channel, funds the sender, signs a balance proof with the locks, registers the secrets of the locks
 * `claimable(i)` picks (default: all) before they expire, closes (receiver, with the sender's proof), waits
 * out the settle window and settles. Lock i has amount `i + 1`.
 */
export async function settledChannelWithLocks(
  fx: ChainFixture,
  options: { count: number; sender?: Party; receiver?: Party; claimable?: (i: number) => boolean; label?: string },
): Promise<SettledChannelWithLocks> {
  const sender = options.sender ?? fx.parties[0]!
  const receiver = options.receiver ?? fx.parties[1]!
  const claimable = options.claimable ?? (() => true)
  const label = options.label ?? `locks-${Date.now()}-${Math.random()}`
  const now = await blockNumber(fx)
  const secrets: Hex[] = []
  const locks: Lock[] = []
  for (let i = 0; i < options.count; i++) {
    const { secret, secrethash } = secretFor(`${label}/${i}`)
    secrets.push(secret)
    locks.push({ expiration: now + 1_000n + BigInt(i), amount: BigInt(i + 1), secrethash })
  }
  const lockedTotal = locks.reduce((sum, l) => sum + l.amount, 0n)
  const channelId = await openFundedChannel(fx, sender, receiver, lockedTotal + 100n, 0n)
  const proof = await signBalanceProof(fx, sender, channelId, { nonce: 1n, transferred: 0n, locked: lockedTotal, locksroot: locksroot(locks) })
  const toRegister = secrets.filter((_, i) => claimable(i))
  if (toRegister.length > 0) await registerSecrets(fx, toRegister)
  await closeChannel(fx, channelId, receiver, sender, proof)
  await passSettleWindow(fx, channelId, sender.address, receiver.address)
  await settleChannel(fx, channelId, settleSide(receiver), settleSide(sender, proof))
  const claimableAmount = locks.reduce((sum, l, i) => (claimable(i) ? sum + l.amount : sum), 0n)
  return {
    channelId,
    sender,
    receiver,
    locks,
    secrets,
    claimable: claimableAmount,
    unclaimable: lockedTotal - claimableAmount,
    encodedLocks: encodeLocks(locks),
  }
}

// ---------------------------------------------------------------------------------------------- fake tokens

/**
 * Creation code of a stand-in "token" that answers every call with one 32-byte word: 0 for the function
 * with selector `falseFor`, 1 for anything else. So totalSupply and balanceOf are 1, and the chosen ERC20
 * function returns false: this reaches the TokenNetwork's "transfer failed" reasons, which an honest token
 * (CustomToken reverts or has the balance) never does. `falseFor: null` answers 0 to everything.
 */
export function fakeTokenBytecode(falseFor: Hex | null): Hex {
  // PUSH1 0 CALLDATALOAD PUSH1 0xe0 SHR PUSH4 <selector> EQ ISZERO PUSH1 0 MSTORE PUSH1 0x20 PUSH1 0 RETURN
  const runtime: Hex = falseFor === null ? '0x60206000f3' : `0x60003560e01c63${falseFor.slice(2)}141560005260206000f3`
  const size = (runtime.length - 2) / 2
  // PUSH1 size PUSH1 12 PUSH1 0 CODECOPY PUSH1 size PUSH1 0 RETURN, then the runtime code
  const sizeHex = size.toString(16).padStart(2, '0')
  return `0x60${sizeHex}600c60003960${sizeHex}6000f3${runtime.slice(2)}` as Hex
}

/** ERC20 selectors for fakeTokenBytecode. */
export const selectors = { transfer: '0xa9059cbb', transferFrom: '0x23b872dd' } as const satisfies Record<string, Hex>

export async function deployRaw(client: AnvilClient, bytecode: Hex): Promise<Address> {
  const hash = await client.sendTransaction({ data: bytecode, to: null })
  const receipt = await waitForReceipt(client, hash, { timeout: 20_000, pollingInterval: 5 })
  if (receipt.status !== 'success' || !receipt.contractAddress) throw new Error('raw deployment failed')
  return getAddress(receipt.contractAddress)
}

/**
 * Simulates deploying `artifact` with `args` and returns why it reverts: the reason string, `panic 0x..`, or
 * `no reason`; null if the deployment would succeed. (expectRevert covers calls; constructors need eth_call with data.)
 */
export async function deployRevertReason<const abi extends Abi>(
  client: AnvilClient,
  artifact: { contractName: keyof typeof bytecode; abi: abi },
  args: ContractConstructorArgs<abi>,
): Promise<string | null> {
  try {
    await client.call({ data: encodeDeployData({ abi: artifact.abi, bytecode: bytecode[artifact.contractName], args } as never) })
    return null
  } catch (e) {
    if (!(e instanceof BaseError)) throw e
    const withData = e.walk((c) => typeof (c as { data?: unknown }).data === 'string') as { data?: Hex } | null
    const data = withData?.data
    if (!data || data === '0x') return 'no reason'
    const decoded = decodeErrorResult({ abi: [], data })
    if (decoded.errorName === 'Error') return decoded.args[0] as string
    if (decoded.errorName === 'Panic') return `panic 0x${(decoded.args[0] as bigint).toString(16)}`
    return decoded.errorName
  }
}
