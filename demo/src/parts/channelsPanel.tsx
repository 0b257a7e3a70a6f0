import { useMemo, useState } from 'preact/hooks'
import { call, get, type Channel, type Network } from '../api.ts'
import { useChannels } from 'sluice/react'
import { useAction, useLoad } from '../hooks.ts'
import { peerOf } from '../others.ts'
import { baseUnits, units, type Token } from '../tokens.ts'
import { AmountInput, Failure, Field, Panel, PeerSelect, TokenSelect, Who, type Shared } from './common.tsx'
import { PeerSide } from './peerSide.tsx'

/** Our channels of one token: each side's balance, deposits and withdrawals, and every action on them. */
export function ChannelsPanel({ shared }: { shared: Shared }) {
  const [address, setAddress] = useState(Object.values(shared.config.tokens)[0]!)
  const token = shared.tokenOf(address)
  // Refetched on the node's channel and payment events (sluice/react).
  const channels = useChannels(address)
  // What this page changes without an event from the node (a new reveal timeout) is read again after its action.
  const { refetch } = channels
  const acted = useMemo(
    () => ({
      ...shared,
      refresh: () => {
        refetch()
        shared.refresh()
      },
    }),
    [shared, refetch],
  )
  const network = useLoad(() => get<Network>(`/tokens/${address}/network`), [address, shared.tick])
  return (
    <Panel title="Channels" id="channels" tools={<TokenSelect shared={shared} name="channels-token" value={address} onChange={setAddress} inline />}>
      <OpenChannel shared={acted} token={token} />
      <Failure error={channels.error} shared={shared} />
      {channels.data?.length === 0 ? <p class="hint">No channel of {token.symbol} yet: open one above.</p> : null}
      <ul class="channels">
        {channels.data?.map((channel) => (
          <ChannelRow
            key={channel.channel_identifier}
            shared={acted}
            token={token}
            channel={channel}
            seen={network.data?.channels.find((c) => c.channel_identifier === channel.channel_identifier)}
            synced={network.data ? BigInt(network.data.synced_block) : undefined}
          />
        ))}
      </ul>
    </Panel>
  )
}

function OpenChannel({ shared, token }: { shared: Shared; token: Token }) {
  const [partner, setPartner] = useState('')
  const [deposit, setDeposit] = useState('10')
  const open = useAction()
  return (
    <form
      class="fields"
      onSubmit={(e) => {
        e.preventDefault()
        void open.run(async () => {
          await call('PUT', '/channels', {
            token_address: token.address,
            partner_address: partner,
            // No deposit is a channel opened empty, as the API allows.
            ...(deposit.trim() ? { total_deposit: baseUnits(deposit, token).toString() } : {}),
          })
          shared.refresh()
        })
      }}
    >
      <PeerSelect label="Partner" shared={shared} name="open-partner" value={partner} onChange={setPartner} />
      <Field label="Deposit">
        <AmountInput name="open-deposit" value={deposit} onInput={setDeposit} unit={token.symbol} />
      </Field>
      <button type="submit" disabled={open.busy || !partner} data-testid="open-channel">
        {open.busy ? 'Opening…' : 'Open channel'}
      </button>
      <Failure error={open.error} shared={shared} />
    </form>
  )
}

function ChannelRow({
  shared,
  token,
  channel,
  seen,
  synced,
}: {
  shared: Shared
  token: Token
  channel: Channel
  seen: Network['channels'][number] | undefined
  synced: bigint | undefined
}) {
  const path = `/channels/${channel.token_address}/${channel.partner_address}`
  const patch = async (body: Record<string, unknown>) => {
    await call('PATCH', path, body)
    shared.refresh()
  }
  const ours = seen ? BigInt(seen.balance1) : BigInt(channel.balance)
  const theirs = seen ? BigInt(seen.balance2) : 0n
  const whole = ours + theirs
  const share = whole > 0n ? Number((ours * 1000n) / whole) / 10 : 50
  const settleIn = seen?.settle_block !== undefined && synced !== undefined ? BigInt(seen.settle_block) - synced : undefined
  const close = useAction()
  const peer = peerOf(shared.config, channel.partner_address)
  return (
    <li class="channel" data-testid={`channel-${channel.partner_address}`}>
      <div class="channel-head">
        <Who shared={shared} address={channel.partner_address} />
        <span class={`chip ${channel.state}`} data-testid="channel-state">
          {channel.state}
        </span>
        <span class="hint">#{channel.channel_identifier}</span>
      </div>
      <div class="bar" role="img" aria-label={`we could pay ${shared.amount(ours, token.address)}, the partner ${shared.amount(theirs, token.address)}`}>
        <span class="ours" style={{ width: `${share}%` }} />
      </div>
      <div class="bar-legend">
        <span>
          you <b data-testid="our-balance">{units(ours, token.decimals)}</b> {token.symbol}
        </span>
        <span>
          partner <b>{units(theirs, token.decimals)}</b> {token.symbol}
        </span>
      </div>
      <p class="hint">
        deposited {shared.amount(channel.total_deposit, token.address)} · withdrawn {shared.amount(channel.total_withdraw, token.address)} · reveal timeout{' '}
        {channel.reveal_timeout} · settle timeout {channel.settle_timeout} blocks
      </p>
      {channel.state === 'closed' && settleIn !== undefined ? (
        <p class="countdown" data-testid="settle-countdown">
          {settleIn > 0n ? `settles in ${settleIn} blocks (at block ${seen?.settle_block})` : 'settle window over: settling…'}
        </p>
      ) : null}
      {channel.state === 'opened' ? (
        <div class="channel-actions">
          <ChannelAction
            shared={shared}
            label="Deposit more"
            name="deposit-amount"
            id={`deposit-amount-${channel.channel_identifier}`}
            unit={token.symbol}
            button="Deposit"
            act={(v) => patch({ total_deposit: (BigInt(channel.total_deposit) + baseUnits(v, token)).toString() })}
          />
          <ChannelAction
            shared={shared}
            label="Withdraw"
            name="withdraw-amount"
            id={`withdraw-amount-${channel.channel_identifier}`}
            unit={token.symbol}
            button="Withdraw"
            act={(v) => patch({ total_withdraw: (BigInt(channel.total_withdraw) + baseUnits(v, token)).toString() })}
          />
          <ChannelAction
            shared={shared}
            label="Reveal timeout"
            name="reveal-timeout"
            id={`reveal-timeout-${channel.channel_identifier}`}
            unit="blocks"
            numeric
            initial={channel.reveal_timeout}
            button="Set"
            act={(v) => patch({ reveal_timeout: v.trim() })}
          />
          <div class="close">
            <button type="button" class="danger" disabled={close.busy} onClick={() => close.run(() => patch({ state: 'closed' }))} data-testid="close-channel">
              {close.busy ? 'Closing…' : 'Close channel'}
            </button>
            <Failure error={close.error} shared={shared} />
          </div>
        </div>
      ) : null}
      {peer ? <PeerSide shared={shared} token={token} channel={channel} peer={peer} /> : null}
    </li>
  )
}

/** One action on a channel with its own labelled input, its own busy state and its own failure beside it. */
function ChannelAction({
  shared,
  id,
  label,
  name,
  unit,
  button,
  act,
  initial = '',
  numeric = false,
}: {
  shared: Shared
  /** Unique on the page: the input's id, for its label. */
  id: string
  label: string
  name: string
  unit: string
  button: string
  act(value: string): Promise<void>
  initial?: string
  numeric?: boolean
}) {
  const [value, setValue] = useState(initial)
  const action = useAction()
  return (
    <form
      class="channel-action"
      onSubmit={(e) => {
        e.preventDefault()
        void action.run(async () => {
          await act(value)
          // An amount is spent; a setting stays as typed (the channel now has it).
          if (!initial) setValue('')
        })
      }}
    >
      <label class="field-label" for={id}>
        {label}
      </label>
      <AmountInput id={id} name={name} value={value} onInput={setValue} unit={unit} numeric={numeric} />
      <button type="submit" disabled={action.busy || !value.trim() || value.trim() === initial} data-testid={`${name}-submit`}>
        {action.busy ? 'Waiting…' : button}
      </button>
      <Failure error={action.error} shared={shared} />
    </form>
  )
}
