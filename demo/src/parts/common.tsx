import type { ComponentChildren } from 'preact'
import { useState } from 'preact/hooks'
import type { DemoConfig } from '../config.ts'
import { explain } from '../failures.ts'
import type { NodeRecord } from '../nodeRecord.ts'
import type { Deployment, Token } from '../tokens.ts'

/** What every panel gets: the configuration, our address, who is who, the tokens, and a tick that moves on every change. */
export type Shared = {
  config: DemoConfig
  deployment: Deployment
  /** The configured tokens, then the service token. */
  tokens: Token[]
  /** The network's minimum settle timeout, in blocks (when a monitoring service may act: tokens.ts). */
  settleTimeoutMin: number
  /** Our node's address: the running node's, or the last one's while it is stopped. */
  address: `0x${string}`
  /** Grows on every pushed event and every few blocks: panels reload their data when it moves. */
  tick: number
  refresh(): void
  /** A known name ("You", "Peer 1", ...), or undefined. */
  knownName(address: string): string | undefined
  /** A known name, else the short address. */
  nameOf(address: string): string
  /** The token at an address (an unknown one as 18 decimals under its short address). */
  tokenOf(address: string): Token
  /** An amount in base units of a token, in the token's units with its symbol: "2.5 TTT". */
  amount(base: bigint | string, token: string): string
  /** What the node recorded: its events and the last payment sent in each token (nodeRecord.ts); none while it is stopped. */
  record: NodeRecord | undefined
  /** How the node routed its last mediated payment: the pathfinding service's routes, or locally and why (pushed events). */
  routing: Routing | undefined
}

/** The pathfinding client's last word on a payment (GET /events: pathfinding_routes, payment_routed_locally). */
export type Routing =
  | { kind: 'service'; url: string; target: string; amount: string; routes: { route: string[]; estimated_fee: string }[] }
  | { kind: 'local'; target: string; amount: string; reason: string }

/** A panel: its title, with what chooses what it shows (a token) beside it, then its content. */
export function Panel({ title, id, children, tools }: { title: string; id: string; children: ComponentChildren; tools?: ComponentChildren }) {
  return (
    <section class="panel" id={id} aria-labelledby={`${id}-title`}>
      <div class="panel-head">
        <h2 id={`${id}-title`}>{title}</h2>
        {tools}
      </div>
      {children}
    </section>
  )
}

/**
 * A failure next to the control that caused it: the message with amounts in token units and peers by name where
 * the page knows its shape (failures.ts), and then the API's own message, status and code as it gave them.
 */
export function Failure({ error, shared }: { error: unknown; shared?: Shared | undefined }) {
  if (error === undefined || error === null || error === '') return null
  const { text, api } = explain(error, shared ? { tokens: shared.tokens, serviceToken: shared.deployment.serviceToken, nameOf: shared.knownName } : undefined)
  return (
    <div class="failure" role="alert">
      <div class="failure-text">{text}</div>
      {api ? (
        <div class="api-message">
          the API said <code>{api}</code>
        </div>
      ) : null}
    </div>
  )
}

/** An address shortened for reading: 0x7099…79C8. */
export function short(address: string): string {
  return `${address.slice(0, 6)}…${address.slice(-4)}`
}

export const sameAddress = (a: string, b: string) => a.toLowerCase() === b.toLowerCase()

/** Copies a full address; says so for a moment. */
export function CopyButton({ text }: { text: string }) {
  const [copied, setCopied] = useState(false)
  return (
    <button
      type="button"
      class="link copy"
      title={`copy ${text}`}
      aria-label={`copy ${text}`}
      onClick={() =>
        navigator.clipboard?.writeText(text).then(() => {
          setCopied(true)
          setTimeout(() => setCopied(false), 1500)
        })
      }
    >
      {copied ? 'copied' : 'copy'}
    </button>
  )
}

/** Who an address is: its name if the page knows it, the address shortened (in full on hover), and a copy button. */
export function Who({ shared, address }: { shared: Shared; address: string }) {
  const name = shared.knownName(address)
  return (
    <span class="who">
      {name ? <b>{name}</b> : null}
      <code title={address}>{short(address)}</code>
      <CopyButton text={address} />
    </span>
  )
}

/** A labelled control: the label above it, so that rows of them line up at every width. */
export function Field({ label, children, class: extra }: { label: string; children: ComponentChildren; class?: string }) {
  return (
    // biome-ignore lint/a11y/noLabelWithoutControl: the control is `children`, inside the label, which names it.
    <label class={extra ? `field ${extra}` : 'field'}>
      <span class="field-label">{label}</span>
      {children}
    </label>
  )
}

/** An amount typed in a token's (or another unit's) terms, with the unit beside it. */
export function AmountInput({
  id,
  name,
  value,
  onInput,
  unit,
  placeholder,
  numeric = false,
}: {
  id?: string
  name: string
  value: string
  onInput(v: string): void
  unit: string
  placeholder?: string
  numeric?: boolean
}) {
  return (
    <span class="with-unit">
      <input
        id={id}
        name={name}
        inputMode={numeric ? 'numeric' : 'decimal'}
        autocomplete="off"
        value={value}
        placeholder={placeholder}
        onInput={(e) => onInput(e.currentTarget.value)}
      />
      <span class="unit">{unit}</span>
    </span>
  )
}

const OTHER = 'other'

/**
 * A partner: one of the known peers by name (with its short address, and its full address to copy), or another
 * address typed in full. `anyone` adds a first choice of no partner, as a filter has.
 */
export function PeerSelect({
  shared,
  value,
  onChange,
  name,
  label,
  anyone = false,
}: {
  shared: Shared
  value: string
  onChange(v: string): void
  name: string
  label: string
  anyone?: boolean
}) {
  const [typing, setTyping] = useState(false)
  const known = shared.config.peers.find((p) => sameAddress(p.address, value))
  const other = typing || (value !== '' && !known)
  const valid = /^0x[0-9a-fA-F]{40}$/.test(value)
  return (
    <div class="field peer-field">
      <label class="field-label" for={name}>
        {label}
      </label>
      <div class="peer">
        <select
          id={name}
          name={name}
          value={other ? OTHER : value}
          onChange={(e) => {
            const choice = e.currentTarget.value
            setTyping(choice === OTHER)
            onChange(choice === OTHER ? '' : choice)
          }}
        >
          <option value="">{anyone ? 'anyone' : 'choose a peer…'}</option>
          {shared.config.peers.map((p) => (
            <option key={p.address} value={p.address}>
              {p.name} · {short(p.address)}
            </option>
          ))}
          <option value={OTHER}>another address…</option>
        </select>
        {known ? <CopyButton text={known.address} /> : null}
      </div>
      {other ? (
        <>
          <input
            name={`${name}-address`}
            aria-label={`${label}: address`}
            placeholder="0x… (the full address)"
            spellcheck={false}
            autocomplete="off"
            value={value}
            onInput={(e) => onChange(e.currentTarget.value.trim())}
          />
          {value ? <span class="hint">{valid ? (shared.knownName(value) ?? 'a node this page does not know') : 'not a whole address yet'}</span> : null}
        </>
      ) : null}
    </div>
  )
}

/**
 * The configured tokens by symbol; with `all`, a first choice of no token (value ''), as a filter has; `inline`
 * puts the label beside it (in a panel's title).
 */
export function TokenSelect({
  shared,
  value,
  onChange,
  name,
  all = false,
  inline = false,
}: { shared: Shared; value: string; name: string; inline?: boolean } & (
  | { all?: false; onChange(v: `0x${string}`): void }
  | { all: true; onChange(v: `0x${string}` | ''): void }
)) {
  return (
    <Field label="Token" class={inline ? 'inline' : undefined}>
      <select name={name} value={value} onChange={(e) => (onChange as (v: string) => void)(e.currentTarget.value)}>
        {all ? <option value="">all</option> : null}
        {Object.entries(shared.config.tokens).map(([symbol, address]) => (
          <option key={address} value={address}>
            {symbol}
          </option>
        ))}
      </select>
    </Field>
  )
}
