// The last answer of each source of the snapshot stream
// (/api/v1/console/stream), and who listens to it.
export const live = { data: {}, listeners: new Set() };

export function onLive(fn) { live.listeners.add(fn); return () => live.listeners.delete(fn); }

// problemText describes a source that answered a problem, '' otherwise.
export function problemText(v) {
  return v && typeof v === 'object' && !Array.isArray(v) && v.status && v.title ? `${v.title}: ${v.detail || ''}` : '';
}
