import type { ComponentChildren } from 'preact'
import type { DemoConfig } from '../config.ts'

/** What every panel gets: the configuration, our address, who is who, and a tick that moves on every change. */
export type Shared = {
  config: DemoConfig
  address: `0x${string}`
  /** Grows on every pushed event and every few blocks: panels reload their data when it moves. */
  tick: number
  refresh(): void
  /** Known names: "You", "Peer 1", ...; else a short address. */
  nameOf(address: string): string
  /** The route of the last payment this page made, for the network picture. */
  lastRoute: `0x${string}`[] | undefined
  setLastRoute(route: `0x${string}`[] | undefined): void
}

export function Panel({ title, id, children, wide }: { title: string; id: string; children: ComponentChildren; wide?: boolean }) {
  return (
    <section class={wide ? 'panel wide' : 'panel'} id={id} aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>{title}</h2>
      {children}
    </section>
  )
}

/** The API's (or the chain's) own message, next to the control that caused it. */
export function Failure({ error }: { error: string | undefined }) {
  if (!error) return null
  return (
    <p class="failure" role="alert">
      {error}
    </p>
  )
}

export function short(address: string): string {
  return `${address.slice(0, 6)}…${address.slice(-4)}`
}

/** Token symbols by address, from the configuration. */
export function symbolOf(config: DemoConfig, token: string): string {
  return Object.entries(config.tokens).find(([, a]) => a.toLowerCase() === token.toLowerCase())?.[0] ?? short(token)
}

/** A partner chosen from the known peers, or typed. */
export function PartnerInput({
  shared,
  value,
  onInput,
  name,
  label,
}: {
  shared: Shared
  value: string
  onInput(v: string): void
  name: string
  label: string
}) {
  const list = `${name}-peers`
  return (
    <label>
      {label}{' '}
      <input name={name} list={list} value={value} placeholder="0x… or pick a peer" spellcheck={false} onInput={(e) => onInput(e.currentTarget.value.trim())} />
      <datalist id={list}>
        {shared.config.peers.map((p) => (
          <option key={p.address} value={p.address}>
            {p.name}
          </option>
        ))}
      </datalist>
    </label>
  )
}

/** The configured tokens by symbol; with `all`, a first choice of no token (value ''), as a filter has. */
export function TokenSelect({
  shared,
  value,
  onChange,
  name,
  all = false,
}: { shared: Shared; value: string; name: string } & (
  | { all?: false; onChange(v: `0x${string}`): void }
  | { all: true; onChange(v: `0x${string}` | ''): void }
)) {
  return (
    <label>
      Token{' '}
      <select name={name} value={value} onChange={(e) => (onChange as (v: string) => void)(e.currentTarget.value)}>
        {all ? <option value="">all</option> : null}
        {Object.entries(shared.config.tokens).map(([symbol, address]) => (
          <option key={address} value={address}>
            {symbol}
          </option>
        ))}
      </select>
    </label>
  )
}
