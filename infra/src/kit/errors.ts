/**
 * A problem the person running the kit can fix. The message is one line that says what is
 * wrong and what to do; the CLI prints it without a stack trace.
 */
export class KitError extends Error {
  override name = 'KitError';
}
