/**
 * A background part of a node: the partner links, the connection manager, the notifications, the monitoring
 * requests and the backup. A service sees the node only through its client (actions/client.ts), as the actions do,
 * and is registered in one place, nodeServices.ts. Its life:
 *
 * - **Made** with the client when createNode builds the node. It may subscribe to the client's notices then (it
 *   hears what happens while the node syncs), but starts no work of its own.
 * - **`start()`** once the node is ready: its first catch-up with the chain is done (status `ready`) and it follows
 *   the chain and delivers. Services start in the order they are registered. Its later failures are its own: it
 *   reports them (`client.report`) and carries on; a throw from `start` fails the node's `run()`.
 * - **`stop()`** when the node stops, in the reverse order (a service may use one registered before it), before the
 *   node stops following the chain and delivering and before the store closes; also when the node stops before it
 *   was ready (then without a `start`). A stop that returns a promise is waited for before the next one stops.
 */
export type Service = {
  start(): void
  stop(): void | Promise<void>
}
