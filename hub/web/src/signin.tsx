// The sign-in form: a Kubernetes bearer token, checked by the hub with TokenReview.

import { useState } from 'preact/hooks';

export function SignIn({
  error,
  busy,
  onSignIn,
}: {
  error?: string;
  busy: boolean;
  onSignIn: (token: string) => void;
}) {
  const [token, setToken] = useState('');
  return (
    <main class="signin-page">
      <form
        id="signin"
        class="signin"
        onSubmit={(e) => {
          e.preventDefault();
          onSignIn(token);
          setToken('');
        }}
      >
        <h1>mirrorhub</h1>
        <p>
          Paste a Kubernetes bearer token for the hub cluster, e.g.{' '}
          <code>kubectl create token &lt;serviceaccount&gt; -n &lt;namespace&gt;</code>; the hub
          checks it with TokenReview and shows what your identity may list.
        </p>
        <p class="muted">
          The token stays in this browser tab (session storage) and is sent only to this hub.
        </p>
        <label>
          Token
          <input
            type="password"
            name="token"
            autocomplete="off"
            spellcheck={false}
            value={token}
            onInput={(e) => setToken(e.currentTarget.value)}
            required
            autofocus
          />
        </label>
        <button type="submit" disabled={busy}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
        <p class="error-text" data-testid="signin-error" role="alert">
          {error ?? ''}
        </p>
      </form>
    </main>
  );
}
