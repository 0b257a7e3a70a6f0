import type { SluiceBrowserNode } from 'sluice/browser'
import { useEffect, useState } from 'preact/hooks'
import { useNodeStatus } from 'sluice/react'
import { CopyButton, Failure, Panel, type Shared } from './common.tsx'

/** The node: who it is, how far it has synced, whether the browser keeps its data (and a button that asks it to). */
export function NodePanel({ shared, node, onStop }: { shared: Shared; node: SluiceBrowserNode; onStop(): void }) {
  // From the node's `status` events (sluice/react).
  const { data: status, error } = useNodeStatus()
  const [mostToSync, setMostToSync] = useState(0)
  useEffect(() => setMostToSync((most) => Math.max(most, Number(status?.blocks_to_sync ?? 0))), [status])
  const left = Number(status?.blocks_to_sync ?? 0)
  const progress = status?.status === 'ready' ? 1 : mostToSync > 0 ? 1 - left / mostToSync : 0
  return (
    <Panel title="Your node" id="node">
      <div class="our-address">
        <span class="field-label">Address</span>
        <span>
          <code data-testid="our-address">{shared.address}</code> <CopyButton text={shared.address} />
        </span>
      </div>
      <dl class="facts">
        <dt>Status</dt>
        <dd>
          <span class={`chip ${status?.status ?? 'unknown'}`} data-testid="node-status">
            {status?.status ?? '…'}
          </span>
          {status?.status === 'syncing' ? ` ${left} blocks to sync` : ''}
        </dd>
        <dt>Sync</dt>
        <dd>
          <progress max={1} value={progress} aria-label="sync progress" />
        </dd>
        <dt>Storage</dt>
        <dd>
          <StoragePersistence node={node} shared={shared} />
        </dd>
        <dt>This tab</dt>
        <dd>{node.leader ? 'runs the node' : 'uses the node of another tab'}</dd>
      </dl>
      <Failure error={error} shared={shared} />
      <button type="button" class="secondary" onClick={onStop} data-testid="stop-node">
        Stop the node
      </button>
    </Panel>
  )
}

/**
 * Whether the browser keeps the node's data: persistent, best effort, or not answered yet (Firefox answers when the
 * person answers its prompt). The start asked in the background; the button asks again on this click, a gesture,
 * which Firefox's prompt expects (docs/decisions/0057).
 */
function StoragePersistence({ node, shared }: { node: SluiceBrowserNode; shared: Shared }) {
  const [persisted, setPersisted] = useState(node.storagePersisted)
  const [asking, setAsking] = useState(false)
  const [failure, setFailure] = useState<unknown>()
  // The answer may come after the start, or long after a prompt: read again until there is one.
  useEffect(() => {
    if (persisted !== undefined) return
    const timer = setInterval(() => setPersisted(node.storagePersisted), 1_000)
    return () => clearInterval(timer)
  }, [node, persisted])
  const ask = async () => {
    setAsking(true)
    setFailure(undefined)
    try {
      await node.persistStorage()
    } catch (e) {
      setFailure(e)
    } finally {
      setAsking(false)
      setPersisted(node.storagePersisted)
    }
  }
  const canAsk = typeof navigator.storage?.persist === 'function'
  return (
    <>
      <span data-testid="storage-persisted">
        {persisted === true
          ? 'persistent: the browser keeps it'
          : persisted === false
            ? 'best effort: the browser may clear it under storage pressure'
            : canAsk
              ? 'not answered yet (the browser may be asking you)'
              : 'best effort: this browser cannot be asked to keep it'}
      </span>
      {persisted !== true && canAsk ? (
        <>
          {' '}
          <button type="button" class="link" disabled={asking} onClick={() => void ask()}>
            {asking ? 'asking…' : 'ask the browser to keep it'}
          </button>
        </>
      ) : null}
      <Failure error={failure} shared={shared} />
    </>
  )
}
