(items) => JSON.parse(items).map(([ref, b]) => {
  const el = window.__rfElements[ref];
  const hit = document.elementFromPoint((b[0] + b[2]) / 2, (b[1] + b[3]) / 2);
  return hit !== null && (hit === el || el.contains(hit) || (el.control !== undefined && el.control === hit));
})
