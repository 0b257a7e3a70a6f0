import { StringDecoder } from 'node:string_decoder'
import { CliError } from './cliError.ts'

/** What the prompt reads: a terminal's standard input (tty.ReadStream), or a stream standing in for one. */
export type PromptInput = NodeJS.ReadableStream & { isTTY?: boolean; isRaw?: boolean; setRawMode?(raw: boolean): unknown }

/** Ctrl-C (or Ctrl-D, the end of input) at the prompt: nothing was started, exit 130 as a shell's interrupted command. */
export class PasswordPromptInterruptedError extends CliError {
  override name = 'PasswordPromptInterruptedError' as const
  override readonly code = 'PROMPT_INTERRUPTED' as const
  constructor() {
    super('interrupted at the password prompt', 130)
  }
}

/**
 * Asks for a password on a terminal without echoing it: `prompt` goes to `output`, then `input` is read in raw
 * mode (no echo, no line editing by the terminal) until Enter. Backspace removes the last character and Ctrl-U
 * the whole line; other control keys and escape sequences (arrows) are ignored. Ctrl-C or the end of input
 * rejects with PasswordPromptInterruptedError: in raw mode the terminal sends Ctrl-C as a byte, not as SIGINT.
 * The caller checks `input.isTTY`: without a terminal the password would echo, so it is not asked.
 */
export function askPassword(prompt: string, input: PromptInput, output: NodeJS.WritableStream): Promise<string> {
  return new Promise((resolve, reject) => {
    const wasRaw = input.isRaw ?? false
    const decoder = new StringDecoder('utf8')
    let typed: string[] = []
    const finish = (error?: Error) => {
      input.off('data', onData)
      input.off('end', onEnd)
      input.setRawMode?.(wasRaw)
      input.pause()
      output.write('\n')
      if (error) reject(error)
      else resolve(typed.join(''))
    }
    const onEnd = () => finish(new PasswordPromptInterruptedError())
    const onData = (chunk: Buffer | string) => {
      const text = typeof chunk === 'string' ? chunk : decoder.write(chunk)
      // Code points, so that a backspace removes a whole character and not half of a surrogate pair.
      const chars = Array.from(text)
      for (let i = 0; i < chars.length; i++) {
        const c = chars[i]!
        if (c === '\r' || c === '\n') return finish()
        if (c === '\u0003' || c === '\u0004') return finish(new PasswordPromptInterruptedError())
        if (c === '\u007f' || c === '\b') typed.pop()
        else if (c === '\u0015') typed = []
        else if (c === '\u001b') {
          // An escape sequence (ESC [ ... letter or ~, or ESC and one character): a key such as an arrow, not text.
          if (chars[i + 1] === '[' || chars[i + 1] === 'O') {
            i++
            while (i + 1 < chars.length && !/[A-Za-z~]/.test(chars[i + 1]!)) i++
          }
          i++
        } else if (c >= ' ') typed.push(c)
      }
    }
    output.write(prompt)
    input.setRawMode?.(true)
    input.on('data', onData)
    input.once('end', onEnd)
    input.resume()
  })
}
