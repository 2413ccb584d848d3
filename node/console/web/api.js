// The API client of the console: fetch with the bearer token (kept in
// sessionStorage), problem details as errors, and server-sent events read
// from a fetch stream, so that the Authorization header goes with them.

const TOKEN_KEY = 'lmosnode.token';

export function token() { return sessionStorage.getItem(TOKEN_KEY) || ''; }
export function setToken(t) { if (t) sessionStorage.setItem(TOKEN_KEY, t); else sessionStorage.removeItem(TOKEN_KEY); }

let loginWaiters = null;

// askToken shows the login dialog once for every caller waiting on it;
// it resolves true when a token was entered, false when the dialog was
// dismissed (Escape).
function askToken(message) {
  if (loginWaiters) return new Promise(r => loginWaiters.push(r));
  loginWaiters = [];
  const dlg = document.getElementById('login');
  const form = document.getElementById('login-form');
  const input = document.getElementById('login-token');
  document.getElementById('login-error').textContent = message || '';
  const finish = ok => {
    const ws = loginWaiters || []; loginWaiters = null;
    ws.forEach(w => w(ok));
  };
  return new Promise(resolve => {
    loginWaiters.push(resolve);
    form.onsubmit = ev => {
      ev.preventDefault();
      setToken(input.value.trim());
      input.value = '';
      dlg.onclose = null;
      dlg.close();
      finish(true);
      showSignedIn();
    };
    dlg.onclose = () => finish(false);
    dlg.showModal();
    input.focus();
  });
}

// showSignedIn offers to forget the token once there is one.
export function showSignedIn() {
  const out = document.getElementById('signout');
  if (!out) return;
  out.hidden = !token();
  out.onclick = () => { setToken(''); out.hidden = true; };
}

const needToken = () => new ApiError(401, { title: 'Unauthorized', status: 401, detail: 'this needs the node\'s API token' });

// ApiError carries the problem details of a failed call.
export class ApiError extends Error {
  constructor(status, problem) {
    super(problem?.detail || problem?.title || `HTTP ${status}`);
    this.status = status;
    this.problem = problem || {};
  }
}

function headers(extra) {
  const h = new Headers(extra || {});
  const t = token();
  if (t) h.set('Authorization', 'Bearer ' + t);
  return h;
}

// request performs one call; on 401 it asks for the token and tries again.
export async function request(method, path, { body, type, accept, signal, raw } = {}) {
  for (let attempt = 0; ; attempt++) {
    // no-store: the directory's answers carry Expires and Last-Modified,
    // and the console always shows what the node says now.
    const init = { method, headers: headers(accept ? { Accept: accept } : {}), signal, cache: 'no-store' };
    if (body !== undefined) {
      init.body = typeof body === 'string' ? body : JSON.stringify(body);
      init.headers.set('Content-Type', type || 'application/json');
    }
    const res = await fetch(path, init);
    if (res.status === 401 && attempt < 3) {
      if (!await askToken(token() ? 'That token was refused.' : '')) throw needToken();
      continue;
    }
    if (raw) return res;
    if (!res.ok && res.status !== 300) {
      let problem = null;
      try { problem = await res.json(); } catch { /* not JSON */ }
      throw new ApiError(res.status, problem);
    }
    const text = await res.text();
    const value = text ? JSON.parse(text) : null;
    return { status: res.status, headers: res.headers, value };
  }
}

export const get = (path, opts) => request('GET', path, opts).then(r => r.value);

// parseSSE turns a text/event-stream body into events: it yields
// {type, id, data} per event, data lines joined with "\n".
export async function* parseSSE(body, signal) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '', ev = { type: '', id: '', data: [] };
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += value;
      let i;
      while ((i = buf.search(/\r\n|\r|\n/)) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + (buf.startsWith('\r\n', i) ? 2 : 1));
        if (line === '') {
          if (ev.data.length || ev.type) yield { type: ev.type || 'message', id: ev.id, data: ev.data.join('\n') };
          ev = { type: '', id: ev.id, data: [] };
          continue;
        }
        if (line.startsWith(':')) continue;
        const c = line.indexOf(':');
        const field = c < 0 ? line : line.slice(0, c);
        let v = c < 0 ? '' : line.slice(c + 1);
        if (v.startsWith(' ')) v = v.slice(1);
        if (field === 'data') ev.data.push(v);
        else if (field === 'event') ev.type = v;
        else if (field === 'id') ev.id = v;
      }
      if (signal?.aborted) break;
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}

// subscribe reads the event stream at path and calls onEvent for each
// event until signal aborts; it reconnects after a drop (with
// Last-Event-ID when resume is set) and reports its state to onState
// ('open', 'closed', or an ApiError for a refusal, which ends it).
export function subscribe(path, onEvent, { signal, onState, resume = false, method = 'GET', body, type } = {}) {
  let lastID = '';
  (async () => {
    let delay = 500;
    while (!signal?.aborted) {
      try {
        const h = resume && lastID ? { 'Last-Event-ID': lastID, Accept: 'text/event-stream' } : { Accept: 'text/event-stream' };
        const res = await requestStream(method, path, h, body, type, signal);
        if (!res.ok) {
          let problem = null;
          try { problem = await res.json(); } catch { /* not JSON */ }
          if (res.status === 410 && resume) { lastID = ''; onState?.('reset'); continue; }
          onState?.(new ApiError(res.status, problem));
          return;
        }
        onState?.('open');
        delay = 500;
        for await (const ev of parseSSE(res.body, signal)) {
          if (ev.id) lastID = ev.id;
          onEvent(ev);
        }
      } catch (e) {
        if (signal?.aborted) return;
      }
      if (signal?.aborted) return;
      if (method !== 'GET') { onState?.('closed'); return; }
      onState?.('closed');
      await new Promise(r => setTimeout(r, delay));
      delay = Math.min(delay * 2, 10000);
    }
  })();
}

async function requestStream(method, path, h, body, type, signal) {
  for (let attempt = 0; ; attempt++) {
    const init = { method, headers: headers(h), signal, cache: 'no-store' };
    if (body !== undefined) {
      init.body = body;
      init.headers.set('Content-Type', type || 'application/json');
    }
    const res = await fetch(path, init);
    if (res.status === 401 && attempt < 3) {
      if (!await askToken(token() ? 'That token was refused.' : '')) return res;
      continue;
    }
    return res;
  }
}
