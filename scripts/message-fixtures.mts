// Writes test/fixtures/messages/<Type>.json: one signed example of each message type as wire JSON, with its
// signer's address and its packed signing bytes. Run once by hand (`npx tsx scripts/message-fixtures.ts`);
// the files are then pinned, and test/unit/protocol/messages/fixtures.test.ts checks the code reproduces them.
import { writeFileSync } from 'node:fs'
import { bytesToHex, type Hex } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { packMessage, signMessage, toWire, type Message } from '../src/protocol/messages/index.ts'
import { FIXTURE_KEY } from '../test/fixtures/messages/key.ts'
import { jsSecp256k1 } from '../src/protocol/secp256k1.ts'

const tn = '0x5FbDB2315678afecb367f032d93F642f64180aa3'
const token = '0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512'
const initiator = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266'
const mediator = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8'
const target = '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC'
const secret: Hex = '0x9f6b3b0c1c3b5d7a24c8a7e5d6f0b1c2d3e4f5061728394a5b6c7d8e9fa0b1c2'
const secrethash: Hex = '0x2c1f0e3b4bd4b0c6e6b5e5b6f2f7c2c0a0d6b1f9f3b5f5d1e6c0a4b7c8d9e0f1'

const examples: Message[] = [
  { type: 'Processed', message_identifier: 18446744073709551615n },
  { type: 'Delivered', delivered_message_identifier: 1700000000123n },
  { type: 'SecretRequest', message_identifier: 1700000000124n, payment_identifier: 42n, secrethash, amount: 10n ** 18n, expiration: 1234n },
  { type: 'RevealSecret', message_identifier: 1700000000125n, secret },
  {
    type: 'LockedTransfer',
    message_identifier: 1700000000126n,
    chain_id: 31337n,
    token_network_address: tn,
    channel_identifier: 7n,
    nonce: 3n,
    transferred_amount: 150n,
    locked_amount: 25n,
    locksroot: '0x0d27e1d5c3b2b1e0a8b4f6a2c9e7d5f3b1a9c7e5d3f1b9a7c5e3d1f9b7a5c3e1',
    payment_identifier: 42n,
    token,
    recipient: mediator,
    lock: { amount: 25n, expiration: 1300n, secrethash },
    target,
    initiator,
    metadata: { routes: [{ route: [mediator, target], address_metadata: {} }] },
  },
  {
    type: 'RefundTransfer',
    message_identifier: 1700000000127n,
    chain_id: 31337n,
    token_network_address: tn,
    channel_identifier: 7n,
    nonce: 4n,
    transferred_amount: 150n,
    locked_amount: 50n,
    locksroot: '0x1d27e1d5c3b2b1e0a8b4f6a2c9e7d5f3b1a9c7e5d3f1b9a7c5e3d1f9b7a5c3e1',
    payment_identifier: 43n,
    token,
    recipient: initiator,
    lock: { amount: 25n, expiration: 1301n, secrethash },
    target: initiator,
    initiator: mediator,
    metadata: { routes: [{ route: [initiator] }] },
  },
  {
    type: 'Unlock',
    message_identifier: 1700000000128n,
    chain_id: 31337n,
    token_network_address: tn,
    channel_identifier: 7n,
    nonce: 5n,
    transferred_amount: 175n,
    locked_amount: 0n,
    locksroot: '0xc5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470',
    payment_identifier: 42n,
    secret,
  },
  {
    type: 'LockExpired',
    message_identifier: 1700000000129n,
    chain_id: 31337n,
    token_network_address: tn,
    channel_identifier: 7n,
    nonce: 6n,
    transferred_amount: 175n,
    locked_amount: 0n,
    locksroot: '0xc5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470',
    recipient: mediator,
    secrethash,
  },
  {
    type: 'WithdrawRequest',
    message_identifier: 1700000000130n,
    chain_id: 31337n,
    token_network_address: tn,
    channel_identifier: 7n,
    participant: initiator,
    total_withdraw: 5n * 10n ** 17n,
    nonce: 7n,
    expiration: 1500n,
    coop_settle: false,
  },
  {
    type: 'WithdrawConfirmation',
    message_identifier: 1700000000130n,
    chain_id: 31337n,
    token_network_address: tn,
    channel_identifier: 7n,
    participant: mediator,
    total_withdraw: 5n * 10n ** 17n,
    nonce: 2n,
    expiration: 1500n,
  },
  {
    type: 'WithdrawExpired',
    message_identifier: 1700000000131n,
    chain_id: 31337n,
    token_network_address: tn,
    channel_identifier: 7n,
    participant: initiator,
    total_withdraw: 5n * 10n ** 17n,
    nonce: 8n,
    expiration: 1500n,
  },
  {
    type: 'PFSCapacityUpdate',
    canonical_identifier: { chain_identifier: 31337n, token_network_address: tn, channel_identifier: 7n },
    updating_participant: initiator,
    other_participant: mediator,
    updating_nonce: 8n,
    other_nonce: 2n,
    updating_capacity: 825n,
    other_capacity: 1175n,
    reveal_timeout: 50n,
  },
  {
    type: 'PFSFeeUpdate',
    canonical_identifier: { chain_identifier: 31337n, token_network_address: tn, channel_identifier: 7n },
    updating_participant: initiator,
    fee_schedule: {
      cap_fees: true,
      flat: 100n,
      proportional: 4000n,
      imbalance_penalty: [
        [0n, 20n],
        [500n, 0n],
        [1000n, 20n],
      ],
    },
    timestamp: '2026-11-21T12:34:56.789012',
  },
  {
    type: 'RequestMonitoring',
    balance_proof: {
      chain_id: 31337n,
      token_network_address: tn,
      channel_identifier: 7n,
      nonce: 5n,
      balance_hash: '0x3e1fa4b1d0c5c1f7e2d4a6b8c0e2f4a6b8d0c2e4f6a8b0d2c4e6f8a0b2d4c6e8',
      additional_hash: '0x4e1fa4b1d0c5c1f7e2d4a6b8c0e2f4a6b8d0c2e4f6a8b0d2c4e6f8a0b2d4c6e8',
      signature: `0x${'1b'.repeat(64)}1c`,
    },
    monitoring_service_contract_address: '0x9fE46736679d2D9a65F0992F2272dE9f3c7fa6e0',
    non_closing_participant: initiator,
    non_closing_signature: `0x${'2c'.repeat(64)}1b`,
    reward_amount: 5n * 10n ** 16n,
  },
]

for (const example of examples) {
  const signed = await signMessage(jsSecp256k1, FIXTURE_KEY, example)
  const fixture = { message: toWire(signed), signer: privateKeyToAddress(FIXTURE_KEY), packed: bytesToHex(packMessage(example)) }
  writeFileSync(`test/fixtures/messages/${example.type}.json`, `${JSON.stringify(fixture, null, 2)}\n`)
}
console.log(`wrote ${examples.length} fixtures`)
