// js-libp2p 3 uses Promise.withResolvers (ES2024), which Node 22 has and
// Node 20 (this project's machines) lacks. Imported first by peer.mjs.
if (typeof Promise.withResolvers !== 'function') {
  Promise.withResolvers = function withResolvers () {
    let resolve, reject
    const promise = new this((res, rej) => { resolve = res; reject = rej })
    return { promise, resolve, reject }
  }
}
