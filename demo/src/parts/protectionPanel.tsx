import { get, type Monitoring, type Settings } from '../api.ts'
import { useLoad } from '../hooks.ts'
import { serviceRecord } from '../others.ts'
import { CopyButton, Failure, Panel, sameAddress, short, type Shared } from './common.tsx'
import { ServiceRecordList, WhenAPartnerCloses } from './serviceRecord.tsx'

/**
 * What protects the node while this tab is closed: the monitoring services that hold each partner's newest proof,
 * what each acknowledged, and what the devnet's service did (its own API, through the demo's server); the
 * off-browser backup's last copy, and what it can and cannot do for this page.
 */
export function ProtectionPanel({ shared }: { shared: Shared }) {
  const monitoring = useLoad(() => get<Monitoring>('/monitoring'), [shared.tick])
  const record = useLoad(() => serviceRecord(shared.config, shared.address), [shared.tick])
  const settings = useLoad(() => get<Settings>('/settings'), [shared.tick])
  const m = monitoring.data
  const service = shared.tokenOf(shared.deployment.serviceToken)
  const serviceName = (address: string) => (sameAddress(address, shared.config.monitor.address) ? "the devnet's monitoring service" : short(address))
  const guarded = m?.channels.filter((c) => c.state === 'opened') ?? []
  return (
    <Panel title="While you are away" id="protection">
      <dl class="facts">
        <dt>Monitoring</dt>
        <dd data-testid="monitoring-state">
          {!m ? (
            '…'
          ) : m.enabled ? (
            <>
              <span class="chip opened">on</span> {shared.amount(m.reward, service.address)} offered per request
              {m.user_deposit && !m.user_deposit.covers_reward ? (
                <span class="hint warn"> · your user deposit does not cover it yet: fund your node</span>
              ) : null}
            </>
          ) : (
            <span class="chip">off</span>
          )}
        </dd>
        {m?.enabled ? (
          <>
            <dt>Services</dt>
            <dd>
              {m.services.length === 0 ? (
                <span class="hint">none registered in the ServiceRegistry</span>
              ) : (
                <ul class="plain">
                  {m.services.map((s) => (
                    <li key={s.address} data-testid="monitoring-service">
                      <span title={s.address}>{serviceName(s.address)}</span> <CopyButton text={s.address} />
                      <span class="hint">
                        {' '}
                        {s.acknowledged} acknowledged
                        {s.last_acknowledged_at ? `, last at ${new Date(s.last_acknowledged_at).toLocaleTimeString()}` : ''}
                        {s.waiting ? `, ${s.waiting} on the way` : ''}
                      </span>
                    </li>
                  ))}
                </ul>
              )}
            </dd>
            <dt>Guarded</dt>
            <dd>
              {guarded.length === 0 ? (
                <span class="hint">no channel yet: a channel is guarded once its partner pays you</span>
              ) : (
                <ul class="plain">
                  {guarded.map((c) => {
                    const last = c.acknowledged.reduce<(typeof c.acknowledged)[number] | undefined>(
                      (newest, a) => (!newest || BigInt(a.nonce) > BigInt(newest.nonce) ? a : newest),
                      undefined,
                    )
                    return (
                      <li key={`${c.token_address}-${c.partner_address}`} data-testid="guarded-channel">
                        {shared.nameOf(c.partner_address)} ({shared.tokenOf(c.token_address).symbol}):{' '}
                        {last
                          ? `newest proof (nonce ${last.nonce}) held by ${serviceName(last.service_address)} since ${new Date(last.acknowledged_at).toLocaleTimeString()}`
                          : c.requested_nonce
                            ? `proof (nonce ${c.requested_nonce}) on its way to the services`
                            : `nothing to guard yet: ${shared.nameOf(c.partner_address)} has not paid you`}
                        {last && c.requested_nonce && c.requested_nonce !== last.nonce ? `; nonce ${c.requested_nonce} on its way` : ''}
                      </li>
                    )
                  })}
                </ul>
              )}
            </dd>
            <dt>The service says</dt>
            <dd data-testid="service-record">{record.data ? <ServiceRecordList shared={shared} record={record.data} /> : '…'}</dd>
          </>
        ) : null}
        <dt>Backup</dt>
        <dd data-testid="backup-state">{settings.data ? <BackupState backup={settings.data.backup} /> : '…'}</dd>
      </dl>
      {m?.enabled ? <WhenAPartnerCloses shared={shared} /> : null}
      {settings.data?.backup ? <BackupWords /> : null}
      <Failure error={monitoring.error ?? record.error ?? settings.error} shared={shared} />
    </Panel>
  )
}

/** The off-browser backup (decisions 0032, 0034): the last copy the server acknowledged, and what it is good for here. */
function BackupState({ backup }: { backup: Settings['backup'] }) {
  if (!backup) return <span class="chip">off</span>
  const last = backup.last_push
  return (
    <>
      {last ? (
        <>
          <span class="chip opened">copy held</span> change {last.version}, {(last.bytes / 1024).toFixed(1)} kB, acknowledged at{' '}
          {new Date(last.at).toLocaleTimeString()}
        </>
      ) : (
        <span class="chip">no copy yet</span>
      )}
      <span class="hint">{backup.behind ? ' · a newer one is on its way' : last ? ' · up to date' : ''}</span>
      {backup.last_error ? (
        <span class="hint warn">
          {' '}
          · last failure: {backup.last_error.message} ({backup.last_error.code}){backup.failures > 1 ? `, ${backup.failures} in a row` : ''}
        </span>
      ) : null}
      {backup.restored ? <span class="hint"> · this start restored change {backup.restored.version}</span> : null}
    </>
  )
}

/** What the backup can and cannot do for this page, in plain words. */
function BackupWords() {
  return (
    <p class="hint" data-testid="backup-words">
      The backup is a sealed copy of what your node needs to get its money back, kept by the demo’s backup server, which cannot read it. It can: if this browser
      deletes the site’s data, a node started again with the same key restores it and goes on with its channels. It cannot, here: this page keeps the key only
      in that same storage, so the key goes too and nobody can open the copy (a dApp that keeps the key elsewhere and gives it to <code>startNode</code> can
      restore). Nor does it act while you are away: the monitoring service does.
    </p>
  )
}
