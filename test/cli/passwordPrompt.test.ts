import { PassThrough } from 'node:stream'
import { describe, expect, test } from 'vitest'
import { askPassword, PasswordPromptInterruptedError } from '../../src/cli/passwordPrompt.ts'

/** A stream standing in for a terminal's stdin: it records the raw modes asked for, as tty.ReadStream keeps isRaw. */
function fakeTerminal() {
  const input = Object.assign(new PassThrough(), {
    isTTY: true as const,
    isRaw: false,
    modes: [] as boolean[],
    setRawMode(raw: boolean) {
      input.isRaw = raw
      input.modes.push(raw)
      return input
    },
  })
  const output = new PassThrough()
  let written = ''
  output.on('data', (c: Buffer) => (written += c.toString()))
  return { input, output, written: () => written }
}

/** Types `keys` (each a chunk, as the terminal sends them) at the prompt and resolves with what it answers. */
async function type(...keys: (string | Buffer)[]) {
  const t = fakeTerminal()
  const answer = askPassword('Password: ', t.input, t.output)
  for (const k of keys) t.input.write(k)
  return { answer: await answer, ...t }
}

describe('askPassword', () => {
  test('shows the prompt, echoes nothing, answers at Enter and puts the terminal back as it was', async () => {
    const { answer, input, written } = await type('se', 'cret', '\r')
    expect(answer).toBe('secret')
    expect(written()).toBe('Password: \n')
    expect(input.modes).toEqual([true, false])
    expect(input.listenerCount('data')).toBe(0)
  })

  test('a line pasted whole: what follows Enter is not part of the password', async () => {
    expect((await type('pasted\rnext line\r')).answer).toBe('pasted')
    expect((await type('lf\n')).answer).toBe('lf')
  })

  test('backspace removes the last character (a whole one, even outside the BMP), Ctrl-U the whole line', async () => {
    expect((await type('abx\u007fc\r')).answer).toBe('abc')
    expect((await type('ab\b\bcd\r')).answer).toBe('cd')
    expect((await type('a\u{1f600}\u007f\r')).answer).toBe('a')
    expect((await type('\u007f\u007fok\r')).answer).toBe('ok')
    expect((await type('wrong\u0015right\r')).answer).toBe('right')
  })

  test('arrow keys and other control characters are not part of the password', async () => {
    expect((await type('a\u001b[Db\u001bOC\u001b[3~c\t\r')).answer).toBe('abc')
  })

  test('a character split across two chunks is read whole', async () => {
    const bytes = Buffer.from('pä\r')
    expect((await type(bytes.subarray(0, 2), bytes.subarray(2))).answer).toBe('pä')
  })

  test.each([
    ['Ctrl-C', '\u0003'],
    ['Ctrl-D', '\u0004'],
  ])('%s rejects with exit code 130 and puts the terminal back', async (_, key) => {
    const t = fakeTerminal()
    t.input.isRaw = false
    const answer = askPassword('Password: ', t.input, t.output)
    t.input.write(`half${key}`)
    const error = await answer.catch((e: unknown) => e)
    expect(error).toBeInstanceOf(PasswordPromptInterruptedError)
    expect(error).toMatchObject({ code: 'PROMPT_INTERRUPTED', exitCode: 130 })
    expect(t.input.modes).toEqual([true, false])
    expect(t.written()).toBe('Password: \n')
  })

  test('the end of input rejects', async () => {
    const t = fakeTerminal()
    const answer = askPassword('Password: ', t.input, t.output)
    t.input.end('partial')
    await expect(answer).rejects.toBeInstanceOf(PasswordPromptInterruptedError)
    expect(t.input.modes).toEqual([true, false])
  })
})
