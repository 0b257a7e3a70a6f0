import type { SluiceBrowserNode } from 'sluice/browser'
import { useEffect, useState } from 'preact/hooks'
import { useNodeStatus } from 'sluice/react'
import { CopyButton, Failure, Panel, type Shared } from './common.tsx'

/** The node: who it is, how far it has synced, whether the browser keeps its data. */
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
        <dd>{node.storagePersisted ? 'persistent (the browser keeps it)' : 'best effort: the browser may clear it under storage pressure'}</dd>
        <dt>This tab</dt>
        <dd>{node.leader ? 'runs the node' : 'uses the node of another tab'}</dd>
      </dl>
      <Failure error={error} shared={shared} />
      <button type="button" class="secondary" onClick={onStop}>
        Stop the node
      </button>
    </Panel>
  )
}
