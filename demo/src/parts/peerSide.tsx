import { useState } from 'preact/hooks'
import { ApiFailure, call, curlLine, get, type Channel } from '../api.ts'
import { useAction, useLoad } from '../hooks.ts'
import type { Peer } from '../others.ts'
import { baseUnits, units, type Token } from '../tokens.ts'
import { AmountInput, Failure, type Shared } from './common.tsx'

/**
 * A channel as the headless peer at its other end sees it, and what the page can ask that peer to do, through the
 * peer's own API (the demo's server passes it on): pay us, close the channel.
 */
export function PeerSide({ shared, token, channel, peer }: { shared: Shared; token: Token; channel: Channel; peer: Peer }) {
  const path = `/channels/${token.address}/${shared.address}`
  // The peer learns of a channel from the chain, a moment after our node does: until then its answer is a 404.
  const view = useLoad(
    () => get<Channel>(path, peer.via).catch((e: unknown) => (e instanceof ApiFailure && e.status === 404 ? null : Promise.reject(e))),
    [path, shared.tick, channel.state],
  )
  const [amount, setAmount] = useState('1')
  const pay = useAction()
  const theirs = view.data
  return (
    <div class="peer-side" data-testid="peer-side">
      <h3>{peer.name}’s side</h3>
      <p data-testid="peer-view">
        {theirs
          ? `${peer.name} sees it ${theirs.state}${theirs.state === 'opened' ? `: it could pay you ${units(theirs.balance, token.decimals)} ${token.symbol}` : ''}.`
          : theirs === null
            ? `${peer.name} has not seen it yet.`
            : view.error
              ? ''
              : '…'}
      </p>
      <Failure error={view.error} shared={shared} />
      {channel.state === 'opened' ? (
        <>
          <form
            class="channel-action"
            onSubmit={(e) => {
              e.preventDefault()
              void pay.run(async () => {
                await call('POST', `/payments/${token.address}/${shared.address}`, { amount: baseUnits(amount, token).toString() }, peer.via)
                shared.refresh()
              })
            }}
          >
            <label class="field-label" for={`peer-pays-${channel.channel_identifier}`}>
              {peer.name} pays you
            </label>
            <AmountInput id={`peer-pays-${channel.channel_identifier}`} name="peer-pays" value={amount} onInput={setAmount} unit={token.symbol} />
            <button type="submit" disabled={pay.busy || !amount.trim()} data-testid="peer-pays-submit">
              {pay.busy ? 'Asking…' : `Ask ${peer.name}`}
            </button>
            <Failure error={pay.error} shared={shared} />
          </form>
          <AskPeerToClose shared={shared} peer={peer} tokenAddress={token.address} />
          <p class="hint">
            Your node, running, answers {peer.name}’s close at once with your newest proof of its payments. To watch the monitoring service do it instead, stop
            your node first (in the “Your node” panel) and ask {peer.name} from the page you then get.
          </p>
          <details class="hint">
            <summary>or with this tab closed</summary>
            <code class="curl">{curlLine('PATCH', path, JSON.stringify({ state: 'closed' }), peer.api.replace(/\/api\/v1$/, ''))}</code>
          </details>
        </>
      ) : null}
    </div>
  )
}

/** A button that asks `peer` (through its own API) to close its channel of `tokenAddress` with us. */
export function AskPeerToClose({ shared, peer, tokenAddress }: { shared: Shared; peer: Peer; tokenAddress: string }) {
  const close = useAction()
  return (
    <div class="close">
      <button
        type="button"
        class="secondary"
        disabled={close.busy}
        data-testid="ask-peer-to-close"
        onClick={() =>
          close.run(async () => {
            await call('PATCH', `/channels/${tokenAddress}/${shared.address}`, { state: 'closed' }, peer.via)
            shared.refresh()
          })
        }
      >
        {close.busy ? `${peer.name} is closing…` : `Ask ${peer.name} to close this channel`}
      </button>
      <Failure error={close.error} shared={shared} />
    </div>
  )
}
