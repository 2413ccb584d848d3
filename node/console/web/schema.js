// Forms generated from a TD's DataSchemas (WoT TD 1.1 §5.3.2): a field per
// schema, read back as a JSON value that matches it.
import { h } from './dom.js';

let seq = 0;

// field returns {el, value()} for schema; name labels it. value() throws
// an Error naming the field when the input does not fit.
export function field(schema, name, initial) {
  schema = schema || {};
  const id = 'f' + (++seq);
  const title = schema.title || name || 'value';
  const hint = schema.description ? h('span', { class: 'muted' }, ' ' + schema.description) : null;
  const type = schema.type || (schema.enum ? typeof schema.enum[0] : schema.const !== undefined ? typeof schema.const : '');
  if (schema.enum) {
    const sel = h('select', { id, 'data-field': name }, schema.enum.map((v, i) => h('option', { value: String(i) }, JSON.stringify(v))));
    return { el: h('label', {}, title, sel, hint), value: () => schema.enum[Number(sel.value)] };
  }
  if (type === 'boolean') {
    const cb = h('input', { type: 'checkbox', id, 'data-field': name, checked: initial === true });
    return { el: h('label', { class: 'check' }, cb, title, hint), value: () => cb.checked };
  }
  if (type === 'number' || type === 'integer') {
    const inp = h('input', { type: 'number', id, 'data-field': name, step: type === 'integer' ? '1' : 'any', min: schema.minimum ?? false, max: schema.maximum ?? false, value: initial ?? '', required: true });
    return {
      el: h('label', {}, title + (schema.unit ? ` (${schema.unit})` : ''), inp, hint),
      value: () => {
        const n = inp.valueAsNumber;
        if (Number.isNaN(n)) throw new Error(`${title}: a number is needed`);
        if (type === 'integer' && !Number.isInteger(n)) throw new Error(`${title}: an integer is needed`);
        return n;
      },
    };
  }
  if (type === 'string') {
    const long = (schema.maxLength || 0) > 200 || schema.contentMediaType;
    const inp = long ? h('textarea', { id, 'data-field': name, rows: 3 }, initial ?? '') : h('input', { type: 'text', id, 'data-field': name, value: initial ?? '', placeholder: schema.format || '' });
    return { el: h('label', {}, title, inp, hint), value: () => inp.value };
  }
  if (type === 'object' && schema.properties) {
    const req = new Set(schema.required || []);
    const subs = Object.entries(schema.properties).map(([k, s]) => {
      const f = field(s, k, initial?.[k]);
      f.key = k;
      f.optional = !req.has(k);
      return f;
    });
    return {
      el: h('fieldset', { 'data-field': name }, h('legend', {}, title), subs.map(s => s.el), hint),
      value: () => {
        const o = {};
        for (const s of subs) {
          const v = s.value();
          if (s.optional && (v === '' || v === undefined)) continue;
          o[s.key] = v;
        }
        return o;
      },
    };
  }
  // Arrays, objects without properties, no type: JSON.
  const ta = h('textarea', { id, 'data-field': name, rows: 3, placeholder: 'JSON' }, initial !== undefined ? JSON.stringify(initial) : '');
  return {
    el: h('label', {}, title + ' (JSON)', ta, hint),
    value: () => {
      if (ta.value.trim() === '') return undefined;
      try { return JSON.parse(ta.value); } catch (e) { throw new Error(`${title}: not JSON: ${e.message}`); }
    },
  };
}
