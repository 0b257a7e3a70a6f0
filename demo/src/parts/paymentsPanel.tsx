import { useState } from 'preact/hooks'
import { parseUnits } from 'viem'
import { call, get, type HistoryEntry, type PaymentResult } from '../api.ts'
import { units } from '../chain.ts'
import { useAction, useLoad } from '../hooks.ts'
import { Failure, Panel, PartnerInput, symbolOf, TokenSelect, type Shared } from './common.tsx'

const PAGE = 10

/** Paying a peer (directly or through the network), the result with its time, the history and what is pending. */
export function PaymentsPanel({ shared }: { shared: Shared }) {
  return (
    <Panel title="Payments" id="payments" wide>
      <Pay shared={shared} />
      <History shared={shared} />
      <Pending shared={shared} />
    </Panel>
  )
}

function Pay({ shared }: { shared: Shared }) {
  const [token, setToken] = useState(Object.values(shared.config.tokens)[0]!)
  const [target, setTarget] = useState('')
  const [amount, setAmount] = useState('1')
  const [identifier, setIdentifier] = useState('')
  const [result, setResult] = useState<{ paid: PaymentResult; ms: number } | undefined>()
  const pay = useAction()
  return (
    <form
      class="row"
      onSubmit={(e) => {
        e.preventDefault()
        setResult(undefined)
        void pay.run(async () => {
          const started = performance.now()
          const body: Record<string, string> = { amount: parseUnits(amount || '0', 18).toString() }
          if (identifier) body.identifier = identifier
          const paid = await call<PaymentResult>('POST', `/payments/${token}/${target}`, body)
          setResult({ paid, ms: performance.now() - started })
          shared.setLastRoute(paid.route)
          shared.refresh()
        })
      }}
    >
      <TokenSelect shared={shared} name="pay-token" value={token} onChange={setToken} />
      <PartnerInput label="To" shared={shared} name="pay-target" value={target} onInput={setTarget} />
      <label>
        Amount <input name="pay-amount" inputMode="decimal" value={amount} onInput={(e) => setAmount(e.currentTarget.value)} size={8} />
      </label>
      <label>
        Identifier{' '}
        <input
          name="pay-identifier"
          inputMode="numeric"
          placeholder="random"
          value={identifier}
          onInput={(e) => setIdentifier(e.currentTarget.value)}
          size={10}
        />
      </label>
      <button type="submit" disabled={pay.busy || !target}>
        {pay.busy ? 'Paying…' : 'Pay'}
      </button>
      <Failure error={pay.error} />
      {result ? (
        <p class="success" data-testid="payment-result">
          Paid {units(result.paid.amount)} {symbolOf(shared.config, result.paid.token_address)} to {shared.nameOf(result.paid.target_address)} in{' '}
          {result.ms.toFixed(0)} ms
          {result.paid.route ? ` via ${['You', ...result.paid.route.map(shared.nameOf)].join(' → ')}` : ''} (identifier {result.paid.identifier})
        </p>
      ) : null}
    </form>
  )
}

function History({ shared }: { shared: Shared }) {
  const [token, setToken] = useState('')
  const [partner, setPartner] = useState('')
  const [page, setPage] = useState(0)
  const valid = /^0x[0-9a-fA-F]{40}$/.test(partner)
  const path = `/payments${token ? `/${token}${valid ? `/${partner}` : ''}` : ''}?limit=${PAGE + 1}&offset=${page * PAGE}`
  const history = useLoad(() => get<HistoryEntry[]>(path), [path, shared.tick])
  const rows = history.data?.slice(0, PAGE) ?? []
  return (
    <div class="history">
      <h3>History</h3>
      <div class="row">
        <TokenSelect
          shared={shared}
          name="history-token"
          all
          value={token}
          onChange={(v) => {
            setToken(v)
            setPage(0)
          }}
        />
        <PartnerInput
          label="Partner"
          shared={shared}
          name="history-partner"
          value={partner}
          onInput={(v) => {
            setPartner(v)
            setPage(0)
          }}
        />

        {partner && !token ? <span class="hint">choose a token to filter by partner</span> : null}
      </div>
      <Failure error={history.error} />
      <table class="history-table">
        <thead>
          <tr>
            <th>Time</th>
            <th>What</th>
            <th>Partner</th>
            <th>Amount</th>
            <th>Identifier</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((e) => (
            <tr key={`${e.log_time}-${e.identifier}-${e.event}`} data-testid="history-row">
              <td>{new Date(e.log_time).toLocaleTimeString()}</td>
              <td>{e.event === 'EventPaymentSentSuccess' ? 'sent' : e.event === 'EventPaymentReceivedSuccess' ? 'received' : `failed: ${e.reason ?? ''}`}</td>
              <td>{shared.nameOf(e.target ?? e.initiator ?? '')}</td>
              <td>
                {e.amount ? units(e.amount) : ''} {symbolOf(shared.config, e.token_address)}
              </td>
              <td>{e.identifier ?? ''}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {rows.length === 0 ? <p class="hint">No payments here yet.</p> : null}
      <div class="row">
        <button type="button" class="secondary" disabled={page === 0} onClick={() => setPage(page - 1)}>
          Previous page
        </button>
        <span class="hint">page {page + 1}</span>
        <button type="button" class="secondary" disabled={(history.data?.length ?? 0) <= PAGE} onClick={() => setPage(page + 1)}>
          Next page
        </button>
      </div>
    </div>
  )
}

type Pending = { role: string; initiator: string; target: string; token_address: string; locked_amount: string; payment_identifier: string }

function Pending({ shared }: { shared: Shared }) {
  const pending = useLoad(() => get<Pending[]>('/pending_transfers'), [shared.tick])
  if (!pending.data?.length) return null
  return (
    <div>
      <h3>Pending transfers</h3>
      <ul>
        {pending.data.map((p) => (
          <li key={`${p.payment_identifier}-${p.role}`}>
            {p.role}: {units(p.locked_amount)} {symbolOf(shared.config, p.token_address)} from {shared.nameOf(p.initiator)} to {shared.nameOf(p.target)},
            identifier {p.payment_identifier}
          </li>
        ))}
      </ul>
    </div>
  )
}
