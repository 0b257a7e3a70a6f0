import type { Migration } from './migrations.ts'

/**
 * The node store's tables on PostgreSQL (component `node`, docs/decisions/0076). Several nodes' stores share one
 * database: `node_stores` has a row per identity (chain id, registry, address, lower case), and every other table is
 * keyed by that row's `store` id first, so each node's rows are one range of each primary key and index.
 *
 * Values are the rows themselves as src/storage/json.ts writes them (bigints tagged), in `text`: `jsonb` would refuse
 * a string holding U+0000 or a lone surrogate, which the node's data may hold. Columns beside a value are only what a
 * query filters or orders by, in the forms the LevelDB keys use (addresses and hashes lower case, nonces and
 * identifiers as numbers).
 */
export const NODE_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    sql: `
CREATE TABLE node_stores (
  id serial PRIMARY KEY,
  chain_id numeric(78, 0) NOT NULL,
  registry text NOT NULL,
  address text NOT NULL,
  meta text NOT NULL,
  snapshot text,
  UNIQUE (chain_id, registry, address)
);
CREATE TABLE node_changes (store integer NOT NULL, seq bigint NOT NULL, value text NOT NULL, PRIMARY KEY (store, seq));
CREATE TABLE node_events (store integer NOT NULL, seq bigint NOT NULL, value text NOT NULL, PRIMARY KEY (store, seq));
CREATE TABLE node_payments (
  store integer NOT NULL, seq bigint NOT NULL, token text NOT NULL, partner text NOT NULL, sent boolean NOT NULL,
  identifier numeric(78, 0) NOT NULL, value text NOT NULL, PRIMARY KEY (store, seq)
);
CREATE INDEX node_payments_token ON node_payments (store, token, seq);
CREATE INDEX node_payments_partner ON node_payments (store, partner, seq);
CREATE INDEX node_payments_token_partner ON node_payments (store, token, partner, seq);
CREATE INDEX node_payments_sent_identifier ON node_payments (store, partner, identifier, seq) WHERE sent;
CREATE TABLE node_chain_events (
  store integer NOT NULL, block bigint NOT NULL, log_index integer NOT NULL, address text NOT NULL, token_network text,
  channel_id numeric(78, 0), value text NOT NULL, PRIMARY KEY (store, block, log_index)
);
CREATE INDEX node_chain_events_address ON node_chain_events (store, address, block, log_index);
CREATE INDEX node_chain_events_token_network ON node_chain_events (store, token_network, block, log_index);
CREATE INDEX node_chain_events_channel ON node_chain_events (store, channel_id, block, log_index);
CREATE TABLE node_outbox (store integer NOT NULL, key text NOT NULL, value text NOT NULL, PRIMARY KEY (store, key));
CREATE TABLE node_transactions (store integer NOT NULL, key text NOT NULL, value text NOT NULL, PRIMARY KEY (store, key));
CREATE TABLE node_sent_proofs (
  store integer NOT NULL, channel_key text NOT NULL, balance_hash text NOT NULL, value text NOT NULL,
  PRIMARY KEY (store, channel_key, balance_hash)
);
CREATE TABLE node_sent_locks (
  store integer NOT NULL, channel_key text NOT NULL, added_nonce numeric(20, 0) NOT NULL, secrethash text NOT NULL,
  removed_nonce numeric(20, 0), value text NOT NULL, PRIMARY KEY (store, channel_key, added_nonce, secrethash)
);
CREATE TABLE node_received (
  store integer NOT NULL, channel_key text NOT NULL, nonce numeric(20, 0) NOT NULL, value text NOT NULL,
  PRIMARY KEY (store, channel_key, nonce)
);
CREATE TABLE node_chain_transactions (store integer NOT NULL, nonce bigint NOT NULL, value text NOT NULL, PRIMARY KEY (store, nonce));
`,
  },
]

/** Every table holding a store's rows (but `node_stores`, the store's own row). */
export const NODE_ROW_TABLES = [
  'node_changes',
  'node_events',
  'node_payments',
  'node_chain_events',
  'node_outbox',
  'node_transactions',
  'node_sent_proofs',
  'node_sent_locks',
  'node_received',
  'node_chain_transactions',
] as const
