// Groups: the node's groups (live from the snapshot stream), create and
// join; one group's members and roles, invitations (token with copy and a
// QR code), remove, admin grant and revoke, leave, dissolve, and its live
// posts.
import { request, subscribe } from './api.js';
import { h, clear, short, when, confirmButton, table } from './dom.js';
import { live, problemText } from './live.js';

const G = '/api/v1/groups';

function note(box, text, cls) { clear(box, h('span', { class: cls || '' }, text)); }

async function act(box, method, path, body) {
  try {
    const r = await request(method, path, body === undefined ? {} : { body });
    note(box, '✓ done', 'valid');
    return r.value;
  } catch (e) {
    note(box, '✗ ' + e.message, 'error');
    return null;
  }
}

export function groupsView(main, ctx) {
  const msg = h('p', { role: 'status' });
  const create = h('form', { class: 'inline', id: 'group-create', onsubmit: async ev => {
    ev.preventDefault();
    const g = await act(msg, 'POST', G, { name: create.elements.name.value.trim() });
    if (g) location.hash = '#/group/' + encodeURIComponent(g.id);
  } }, h('label', {}, 'Name', h('input', { name: 'name', required: true })), h('button', { type: 'submit' }, 'Create group'));
  const join = h('form', { class: 'inline', onsubmit: async ev => {
    ev.preventDefault();
    const g = await act(msg, 'POST', G + '/join', { token: join.elements.token.value.trim() });
    if (g?.pending) note(msg, 'Waiting for an admin of the group to answer; the node keeps trying.');
    else if (g) location.hash = '#/group/' + encodeURIComponent(g.id);
  } }, h('label', {}, 'Invitation token', h('input', { name: 'token', required: true, size: 40 })), h('button', { type: 'submit' }, 'Join'));
  const list = h('div', { id: 'groups', 'aria-live': 'polite' });
  main.append(h('h2', {}, 'Groups'), h('section', { class: 'card grid2' }, create, join), msg, list);
  ctx.onLive(src => {
    if (src && src !== G) return;
    const gs = live.data[G];
    if (!gs) return;
    if (problemText(gs)) { note(list, problemText(gs), 'error'); return; }
    if (!gs.length) { note(list, 'This node belongs to no group yet.', 'muted'); return; }
    clear(list, table( {}, h('thead', {}, h('tr', {}, ['Group', 'Members', 'You', 'State'].map(t => h('th', { scope: 'col' }, t)))),
      h('tbody', {}, gs.map(g => h('tr', {},
        h('td', {}, h('a', { href: '#/group/' + encodeURIComponent(g.id) }, g.name || short(g.id)), h('div', { class: 'muted mono' }, short(g.id, 10))),
        h('td', {}, String((g.members || []).length)),
        h('td', {}, g.self?.admin ? 'admin' : g.self?.member ? 'member' : 'not a member'),
        h('td', {}, g.dissolved ? 'dissolved' : 'active'))))));
  });
}

export function groupView(main, ctx, id) {
  const path = G + '/' + encodeURIComponent(id);
  const msg = h('p', { role: 'status', id: 'group-msg' });
  const head = h('div', {}, h('h2', {}, 'Group'));
  const members = h('section', { class: 'card', id: 'members', 'aria-live': 'polite' });
  const invitations = h('section', { class: 'card', id: 'invitations', hidden: true });
  const invite = inviteBox(path, ctx, () => listInvitations());
  const posts = postsBox(path, ctx);
  const danger = h('section', { class: 'card row' },
    confirmButton('Leave', () => act(msg, 'POST', path + '/leave'), { id: 'group-leave' }),
    confirmButton('Dissolve', () => act(msg, 'DELETE', path), { id: 'group-dissolve', title: 'dissolve the group for every member' }));
  main.append(head, msg, members, invite, invitations, posts, danger);
  // The invitations this node issued (or the log's adds used), with
  // revoke for the outstanding ones.
  const listInvitations = async () => {
    let invs;
    try { invs = (await request('GET', path + '/invitations', { signal: ctx.signal })).value; } catch { return; }
    invitations.hidden = !invs?.length;
    if (!invs?.length) return;
    clear(invitations, h('h3', {}, 'Invitations'), table( {}, h('thead', {}, h('tr', {}, ['Invitation', 'For', 'Role', 'Used', 'Expires', 'State', ''].map(t => h('th', { scope: 'col' }, t)))),
      h('tbody', {}, invs.map(i => h('tr', { 'data-invitation': i.id },
        h('td', { class: 'mono' }, short(i.id, 8)), h('td', {}, i.for ? h('code', { title: i.for }, short(i.for, 8)) : 'anyone'),
        h('td', {}, i.role || 'member'), h('td', {}, `${i.used ?? 0}/${i.uses ? i.uses : '∞'}`), h('td', {}, when(i.expires)), h('td', {}, i.status),
        h('td', {}, i.status === 'outstanding' && i.mine ? confirmButton('Revoke', () => act(msg, 'DELETE', `${path}/invitations/${i.id}`).then(listInvitations), { 'data-revoke-invitation': i.id }) : null))))));
  };
  listInvitations();
  const self = () => live.data['/api/v1/node']?.peerID;
  let lastKey = '';
  const render = g => {
    const key = JSON.stringify(g);
    if (key === lastKey) return;
    lastKey = key;
    clear(head, h('h2', {}, g.name || g.id), h('p', { class: 'muted' }, h('code', {}, g.id), ` · founded by ${short(g.founder, 8)} on ${when(g.created)}`, g.dissolved ? ' · dissolved' : ''),
      h('p', {}, h('a', { href: '#/things?group=' + encodeURIComponent(g.id) }, 'Things of this group')));
    const admin = g.self?.admin;
    clear(members, h('h3', {}, 'Members'), table( {}, h('thead', {}, h('tr', {}, ['Peer', 'Role', 'Since', ''].map(t => h('th', { scope: 'col' }, t)))),
      h('tbody', {}, (g.members || []).map(m => h('tr', { 'data-peer': m.peer },
        h('td', {}, h('code', { title: m.peer }, m.peer), m.peer === self() ? h('span', { class: 'muted' }, ' (this node)') : null),
        h('td', {}, m.admin ? 'admin' : (m.role || 'member')),
        h('td', {}, when(m.since)),
        h('td', {}, admin && m.peer !== self() ? [
          m.admin ? h('button', { type: 'button', class: 'secondary', 'data-revoke': m.peer, onclick: () => act(msg, 'DELETE', `${path}/admins/${m.peer}`).then(refresh) }, 'Revoke admin')
            : h('button', { type: 'button', class: 'secondary', 'data-grant': m.peer, onclick: () => act(msg, 'PUT', `${path}/admins/${m.peer}`).then(refresh) }, 'Make admin'),
          ' ',
          confirmButton('Remove', () => act(msg, 'DELETE', `${path}/members/${m.peer}`).then(refresh), { 'data-remove': m.peer }),
        ] : null))))));
  };
  const refresh = async () => {
    try { render((await request('GET', path, { signal: ctx.signal })).value); } catch (e) { if (!ctx.signal.aborted) note(msg, '✗ ' + e.message, 'error'); }
  };
  // The snapshot stream carries every group; the view follows its entry.
  ctx.onLive(src => {
    if (src && src !== G) return;
    const g = (live.data[G] || []).find?.(x => x.id === id || x.name === id);
    if (g) { if (JSON.stringify(g) !== lastKey) listInvitations(); render(g); } else refresh();
  });
}

function inviteBox(path, ctx, issued) {
  const res = h('div', { id: 'invitation' });
  const form = h('form', { class: 'inline', id: 'invite-form', onsubmit: async ev => {
    ev.preventDefault();
    const body = {};
    const f = form.elements;
    if (f.for.value.trim()) body.for = f.for.value.trim();
    if (f.ttl.value.trim()) body.ttl = f.ttl.value.trim();
    if (f.uses.value !== '') body.uses = Number(f.uses.value);
    if (f.role.value) body.role = f.role.value;
    try {
      const inv = (await request('POST', path + '/invitations', { body })).value;
      issued();
      const qr = h('div', { class: 'qr', role: 'img', 'aria-label': 'QR code of the invitation token' });
      const tok = h('textarea', { readonly: true, rows: 3, id: 'invitation-token' }, inv.token);
      clear(res, h('p', {}, `Invitation ${short(inv.id, 8)}, valid until ${when(inv.expires)}.`), tok,
        h('div', { class: 'row' }, h('button', { type: 'button', onclick: async ev2 => {
          try { await navigator.clipboard.writeText(inv.token); ev2.target.textContent = 'Copied'; } catch { tok.select(); document.execCommand('copy'); ev2.target.textContent = 'Copied'; }
        } }, 'Copy token')), qr);
      const r = await request('POST', '/api/v1/console/qr', { body: { text: inv.token }, raw: true, signal: ctx.signal });
      if (r.ok) {
        const svg = new DOMParser().parseFromString(await r.text(), 'image/svg+xml').documentElement;
        if (svg.nodeName === 'svg') qr.append(document.importNode(svg, true));
      }
    } catch (e) { clear(res, h('p', { class: 'error' }, '✗ ' + e.message)); }
  } },
  h('label', {}, 'For peer (optional)', h('input', { name: 'for', size: 30, placeholder: '12D3KooW…' })),
  h('label', {}, 'Valid for', h('input', { name: 'ttl', size: 6, placeholder: '24h' })),
  h('label', {}, 'Uses (0: any)', h('input', { name: 'uses', type: 'number', min: 0, size: 4 })),
  h('label', {}, 'Role', h('select', { name: 'role' }, h('option', { value: '' }, 'member'), h('option', { value: 'admin' }, 'admin'))),
  h('button', { type: 'submit' }, 'Invite'));
  return h('section', { class: 'card' }, h('h3', {}, 'Invite'), form, res);
}

function postsBox(path, ctx) {
  const log = h('div', { class: 'log', id: 'posts', 'aria-live': 'polite' });
  const state = h('span', { class: 'muted', id: 'posts-state' });
  const form = h('form', { class: 'inline', id: 'post-form', onsubmit: async ev => {
    ev.preventDefault();
    const text = form.elements.text.value;
    try { await request('POST', path + '/messages', { body: JSON.stringify(text) }); form.elements.text.value = ''; } catch (e) { clear(state, h('span', { class: 'error' }, '✗ ' + e.message)); }
  } }, h('label', {}, 'Post', h('input', { name: 'text', required: true, size: 40 })), h('button', { type: 'submit' }, 'Send'));
  subscribe(path + '/messages', ev => {
    let p; try { p = JSON.parse(ev.data); } catch { return; }
    const body = typeof p.body === 'string' ? p.body : JSON.stringify(p.body);
    log.prepend(h('div', {}, h('span', { class: 'muted' }, `${new Date(p.sent || Date.now()).toLocaleTimeString()} ${short(p.from, 6)}: `), body));
  }, { signal: ctx.signal, onState: st => { state.textContent = st === 'open' ? 'live' : st instanceof Error ? st.message : 'reconnecting…'; } });
  return h('section', { class: 'card' }, h('h3', {}, 'Posts ', state), form, log);
}
