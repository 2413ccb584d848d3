// h builds an element: h('a', {href: '#'}, 'text', child…). Attributes
// starting with "on" are listeners; false/null ones are left out.
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === false || v === null || v === undefined) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else if (k === 'value') el.value = v;
    else if (k === 'checked') el.checked = !!v;
    else el.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
  return el;
}

export function clear(el, ...children) { el.replaceChildren(); for (const c of children.flat(Infinity)) if (c) el.append(c); return el; }

export function short(s, n = 12) { s = String(s || ''); return s.length > 2 * n + 1 ? s.slice(0, n) + '…' + s.slice(-6) : s; }

export function when(t) {
  if (!t) return '';
  const d = new Date(t);
  return isNaN(d) ? String(t) : d.toLocaleString();
}

export function duration(ms) {
  const s = Math.max(0, Math.floor(ms / 1000));
  const d = Math.floor(s / 86400), hh = Math.floor(s % 86400 / 3600), m = Math.floor(s % 3600 / 60);
  return (d ? d + 'd ' : '') + (d || hh ? hh + 'h ' : '') + m + 'm ' + (s % 60) + 's';
}

export function json(v) { return JSON.stringify(v, null, 2); }

// confirmButton is a button that asks once more in its own label before
// it acts (no modal dialog: keyboard and tests use it like any button).
export function confirmButton(label, act, attrs = {}) {
  let armed = null;
  const b = h('button', { type: 'button', class: 'danger', ...attrs, onclick: () => {
    if (!armed) {
      b.textContent = 'Confirm: ' + label.toLowerCase() + '?';
      armed = setTimeout(() => { armed = null; b.textContent = label; }, 5000);
      return;
    }
    clearTimeout(armed); armed = null; b.textContent = label;
    act();
  } }, label);
  return b;
}

// table is a table in a box that scrolls sideways when the table is wider
// than the screen (the page itself never is).
export function table(attrs, ...children) {
  return h('div', { class: 'scroll' }, h('table', attrs, ...children));
}
