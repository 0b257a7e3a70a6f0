import { useState } from 'preact/hooks'
import { parseUnits } from 'viem'
import { call, get, type Channel, type Network } from '../api.ts'
import { units } from '../chain.ts'
import { useAction, useLoad } from '../hooks.ts'
import { Failure, Panel, PartnerInput, short, symbolOf, TokenSelect, type Shared } from './common.tsx'

const amount = (text: string) => parseUnits(text || '0', 18)

/** Our channels of one token: each side's balance, deposits and withdrawals, and every action on them. */
export function ChannelsPanel({ shared }: { shared: Shared }) {
  const [token, setToken] = useState(Object.values(shared.config.tokens)[0]!)
  const channels = useLoad(() => get<Channel[]>(`/channels/${token}`), [token, shared.tick])
  const network = useLoad(() => get<Network>(`/tokens/${token}/network`), [token, shared.tick])
  return (
    <Panel title="Channels" id="channels" wide>
      <div class="row">
        <TokenSelect shared={shared} name="channels-token" value={token} onChange={setToken} />
      </div>
      <OpenChannel shared={shared} token={token} />
      <Failure error={channels.error} />
      {channels.data?.length === 0 ? <p class="hint">No channel of {symbolOf(shared.config, token)} yet: open one above.</p> : null}
      <ul class="channels">
        {channels.data?.map((channel) => (
          <ChannelRow
            key={channel.channel_identifier}
            shared={shared}
            channel={channel}
            seen={network.data?.channels.find((c) => c.channel_identifier === channel.channel_identifier)}
            synced={network.data ? BigInt(network.data.synced_block) : undefined}
          />
        ))}
      </ul>
    </Panel>
  )
}

function OpenChannel({ shared, token }: { shared: Shared; token: `0x${string}` }) {
  const [partner, setPartner] = useState('')
  const [deposit, setDeposit] = useState('10')
  const open = useAction()
  return (
    <form
      class="row"
      onSubmit={(e) => {
        e.preventDefault()
        void open.run(async () => {
          await call('PUT', '/channels', { token_address: token, partner_address: partner, total_deposit: amount(deposit).toString() })
          shared.refresh()
        })
      }}
    >
      <PartnerInput label="Partner" shared={shared} name="open-partner" value={partner} onInput={setPartner} />
      <label>
        Deposit <input name="open-deposit" inputMode="decimal" value={deposit} onInput={(e) => setDeposit(e.currentTarget.value)} size={8} />
      </label>
      <button type="submit" disabled={open.busy || !partner}>
        {open.busy ? 'Opening…' : 'Open channel'}
      </button>
      <Failure error={open.error} />
    </form>
  )
}

function ChannelRow({
  shared,
  channel,
  seen,
  synced,
}: {
  shared: Shared
  channel: Channel
  seen: Network['channels'][number] | undefined
  synced: bigint | undefined
}) {
  const action = useAction()
  const [value, setValue] = useState('')
  const path = `/channels/${channel.token_address}/${channel.partner_address}`
  const patch = (body: Record<string, unknown>) =>
    action.run(async () => {
      await call('PATCH', path, body)
      setValue('')
      shared.refresh()
    })
  const ours = seen ? BigInt(seen.balance1) : BigInt(channel.balance)
  const theirs = seen ? BigInt(seen.balance2) : 0n
  const whole = ours + theirs
  const share = whole > 0n ? Number((ours * 1000n) / whole) / 10 : 50
  const settleIn = seen?.settle_block !== undefined && synced !== undefined ? BigInt(seen.settle_block) - synced : undefined
  return (
    <li class="channel" data-testid={`channel-${channel.partner_address}`}>
      <div class="channel-head">
        <strong>{shared.nameOf(channel.partner_address)}</strong> <code title={channel.partner_address}>{short(channel.partner_address)}</code>{' '}
        <span class={`chip ${channel.state}`} data-testid="channel-state">
          {channel.state}
        </span>{' '}
        <span class="hint">#{channel.channel_identifier}</span>
      </div>
      <div class="bar" role="img" aria-label={`we could pay ${units(ours)}, the partner ${units(theirs)}`}>
        <span class="ours" style={{ width: `${share}%` }} />
      </div>
      <div class="bar-legend">
        <span>
          you <b data-testid="our-balance">{units(ours)}</b>
        </span>
        <span>
          partner <b>{units(theirs)}</b>
        </span>
      </div>
      <p class="hint">
        deposited {units(channel.total_deposit)} · withdrawn {units(channel.total_withdraw)} · reveal timeout {channel.reveal_timeout} · settle timeout{' '}
        {channel.settle_timeout}
      </p>
      {channel.state === 'closed' && settleIn !== undefined ? (
        <p class="countdown" data-testid="settle-countdown">
          {settleIn > 0n ? `settles in ${settleIn} blocks (at block ${seen?.settle_block})` : 'settle window over: settling…'}
        </p>
      ) : null}
      {channel.state === 'opened' ? (
        <div class="row actions">
          <input
            name="channel-amount"
            inputMode="decimal"
            placeholder="amount or blocks"
            value={value}
            onInput={(e) => setValue(e.currentTarget.value)}
            size={10}
          />
          <button
            type="button"
            disabled={action.busy || !value}
            onClick={() => patch({ total_deposit: (BigInt(channel.total_deposit) + amount(value)).toString() })}
          >
            Deposit
          </button>
          <button
            type="button"
            disabled={action.busy || !value}
            onClick={() => patch({ total_withdraw: (BigInt(channel.total_withdraw) + amount(value)).toString() })}
          >
            Withdraw
          </button>
          <button type="button" disabled={action.busy || !value} onClick={() => patch({ reveal_timeout: value })}>
            Set reveal timeout
          </button>
          <button type="button" class="danger" disabled={action.busy} onClick={() => patch({ state: 'closed' })}>
            Close
          </button>
        </div>
      ) : null}
      {action.busy ? <p class="hint">waiting for the chain…</p> : null}
      <Failure error={action.error} />
    </li>
  )
}
