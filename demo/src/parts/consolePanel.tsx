import { useState } from 'preact/hooks'
import { curlLine, request, type Answer } from '../api.ts'
import { useAction } from '../hooks.ts'
import { Failure, Panel } from './common.tsx'

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE']

/** Any call under /api/v1, its status and JSON, and the same call as curl against `sluice serve`. */
export function ConsolePanel() {
  const [method, setMethod] = useState('GET')
  const [path, setPath] = useState('/channels')
  const [body, setBody] = useState('')
  const [answer, setAnswer] = useState<Answer | undefined>()
  const send = useAction()
  const sendsBody = method !== 'GET' && method !== 'DELETE'
  return (
    <Panel title="REST console" id="console">
      <form
        onSubmit={(e) => {
          e.preventDefault()
          void send.run(async () => {
            if (sendsBody && body.trim()) JSON.parse(body)
            setAnswer(await request(method, path.startsWith('/') ? path : `/${path}`, sendsBody && body.trim() ? body : undefined))
          })
        }}
      >
        <div class="console-line">
          <select name="console-method" value={method} onChange={(e) => setMethod(e.currentTarget.value)}>
            {METHODS.map((m) => (
              <option key={m}>{m}</option>
            ))}
          </select>
          <span class="prefix">/api/v1</span>
          <input name="console-path" class="grow" value={path} spellcheck={false} onInput={(e) => setPath(e.currentTarget.value)} />
          <button type="submit" disabled={send.busy}>
            Send
          </button>
        </div>
        {sendsBody ? (
          <textarea
            name="console-body"
            rows={4}
            placeholder='{"amount": "1"}'
            spellcheck={false}
            value={body}
            onInput={(e) => setBody(e.currentTarget.value)}
          />
        ) : null}
      </form>
      <Failure error={send.error} />
      <pre class="curl" data-testid="curl">
        {curlLine(method, path.startsWith('/') ? path : `/${path}`, sendsBody && body.trim() ? body : undefined)}
      </pre>
      {answer ? (
        <div data-testid="console-answer">
          <p>
            <span class={`chip ${answer.status < 400 ? 'ready' : 'failed'}`}>{answer.status}</span> in {answer.ms.toFixed(0)} ms
          </p>
          <pre class="json">{typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body, null, 2)}</pre>
        </div>
      ) : null}
    </Panel>
  )
}
