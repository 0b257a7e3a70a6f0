import { useState } from 'preact/hooks'
import { call, type PaymentResult } from '../api.ts'
import { usePayments, usePendingTransfers } from 'sluice/react'
import { useAction } from '../hooks.ts'
import { baseUnits } from '../tokens.ts'
import { AmountInput, Failure, Field, Panel, PeerSelect, sameAddress, TokenSelect, type Shared } from './common.tsx'

const PAGE = 10

/** Paying a peer (directly or through the network), the result with its time, the history and what is pending. */
export function PaymentsPanel({ shared }: { shared: Shared }) {
  return (
    <Panel title="Payments" id="payments">
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
      class="fields"
      onSubmit={(e) => {
        e.preventDefault()
        setResult(undefined)
        void pay.run(async () => {
          const started = performance.now()
          const body: Record<string, string> = { amount: baseUnits(amount, shared.tokenOf(token)).toString() }
          if (identifier.trim()) body.identifier = identifier.trim()
          const paid = await call<PaymentResult>('POST', `/payments/${token}/${target}`, body)
          setResult({ paid, ms: performance.now() - started })
          shared.refresh()
        })
      }}
    >
      <TokenSelect shared={shared} name="pay-token" value={token} onChange={setToken} />
      <PeerSelect label="To" shared={shared} name="pay-target" value={target} onChange={setTarget} />
      <Field label="Amount">
        <AmountInput name="pay-amount" value={amount} onInput={setAmount} unit={shared.tokenOf(token).symbol} />
      </Field>
      <Field label="Identifier" class="identifier">
        <input
          name="pay-identifier"
          inputMode="numeric"
          autocomplete="off"
          placeholder="random"
          value={identifier}
          onInput={(e) => setIdentifier(e.currentTarget.value)}
        />
      </Field>
      <button type="submit" disabled={pay.busy || !target} data-testid="pay">
        {pay.busy ? 'Paying…' : 'Pay'}
      </button>
      <Failure error={pay.error} shared={shared} />
      {result ? (
        <p class="success" data-testid="payment-result">
          Paid {shared.amount(result.paid.amount, result.paid.token_address)} to {shared.nameOf(result.paid.target_address)} in {result.ms.toFixed(0)} ms
          {result.paid.route ? ` via ${['You', ...result.paid.route.map(shared.nameOf)].join(' → ')}` : ''} (identifier {result.paid.identifier})
          {result.paid.fee !== undefined ? `, fee ${shared.amount(result.paid.fee, result.paid.token_address)}` : ''}
        </p>
      ) : null}
      {result ? <RoutedBy shared={shared} paid={result.paid} /> : null}
    </form>
  )
}

/**
 * Who chose the route of a payment just made (docs/decisions/0073): the pathfinding service, with the routes it answered
 * and the fee it estimated for each (what was paid is that estimate and Raiden's margin), or the node itself and why.
 * Nothing for a direct payment, which asks no one.
 */
function RoutedBy({ shared, paid }: { shared: Shared; paid: PaymentResult }) {
  const routing = shared.routing
  const same = routing && sameAddress(routing.target, paid.target_address) && routing.amount === paid.amount
  if (!same || !paid.route || paid.route.length < 2) return null
  const path = (route: string[]) => ['You', ...route.map(shared.nameOf)].join(' → ')
  if (routing.kind === 'local')
    return (
      <p class="hint" data-testid="payment-routing">
        Routed by this node: {routing.reason}
      </p>
    )
  return (
    <div class="routing" data-testid="payment-routing">
      <p>
        Route chosen by the pathfinding service <code>{routing.url}</code>:
      </p>
      <ol>
        {routing.routes.map((r) => {
          const taken = r.route.length === paid.route!.length && r.route.every((a, i) => sameAddress(a, paid.route![i]!))
          return (
            <li key={r.route.join()} class={taken ? 'taken' : undefined}>
              {path(r.route)}, estimated fee {shared.amount(r.estimated_fee, paid.token_address)}
              {taken ? ' (taken)' : ''}
            </li>
          )
        })}
      </ol>
    </div>
  )
}

function History({ shared }: { shared: Shared }) {
  const [token, setToken] = useState('')
  const [partner, setPartner] = useState('')
  const [page, setPage] = useState(0)
  const valid = /^0x[0-9a-fA-F]{40}$/.test(partner)
  // Refetched on the node's payment events (sluice/react).
  const history = usePayments({
    ...(token ? { token: token as `0x${string}` } : {}),
    ...(token && valid ? { partner: partner as `0x${string}` } : {}),
    limit: PAGE + 1,
    offset: page * PAGE,
  })
  const rows = history.data?.slice(0, PAGE) ?? []
  return (
    <div class="history">
      <h3>History</h3>
      <div class="fields">
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
        <PeerSelect
          label="Partner"
          shared={shared}
          name="history-partner"
          anyone
          value={partner}
          onChange={(v) => {
            setPartner(v)
            setPage(0)
          }}
        />
        {partner && !token ? <span class="hint">choose a token to filter by partner</span> : null}
      </div>
      <Failure error={history.error} shared={shared} />
      <table class="history-table">
        <thead>
          <tr>
            <th>Time</th>
            <th>What</th>
            <th>Partner</th>
            <th class="amount">Amount</th>
            <th>Identifier</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((e) => (
            <tr key={`${e.log_time}-${e.identifier}-${e.event}`} data-testid="history-row">
              <td class="time">{new Date(e.log_time).toLocaleTimeString()}</td>
              <td class="what">
                {e.event === 'EventPaymentSentSuccess' ? 'sent' : e.event === 'EventPaymentReceivedSuccess' ? 'received' : `failed: ${e.reason ?? ''}`}
              </td>
              <td class="partner">{shared.nameOf(e.target ?? e.initiator ?? '')}</td>
              <td class="amount">{e.amount ? shared.amount(e.amount, e.token_address) : shared.tokenOf(e.token_address).symbol}</td>
              <td class="identifier">{e.identifier ?? ''}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {/* Until the first answer (a reload under load can take seconds), an empty table is not an empty history. */}
      {history.data === undefined && history.loading ? <p class="hint">Loading the history…</p> : null}
      {history.data !== undefined && rows.length === 0 ? <p class="hint">No payments here yet.</p> : null}
      <div class="pages">
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

function Pending({ shared }: { shared: Shared }) {
  const pending = usePendingTransfers()
  if (!pending.data?.length) return null
  return (
    <div>
      <h3>Pending transfers</h3>
      <ul>
        {pending.data.map((p) => (
          <li key={`${p.payment_identifier}-${p.role}`}>
            {p.role}: {shared.amount(p.locked_amount, p.token_address)} from {shared.nameOf(p.initiator)} to {shared.nameOf(p.target)}, identifier{' '}
            {p.payment_identifier}
          </li>
        ))}
      </ul>
    </div>
  )
}
