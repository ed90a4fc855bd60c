() => {
  const W = innerWidth, H = innerHeight;
  const norm = (s) => s.replace(/\s+/g, ' ').trim();
  const visible = (el) => el.checkVisibility({checkOpacity: true, checkVisibilityCSS: true});
  // Visible region of an element's content: the viewport cut by every clipping ancestor.
  const clipCache = new Map();
  function clipOf(el) {
    const parent = el.parentElement;
    if (!parent) return [0, 0, W, H];
    if (clipCache.has(parent)) return clipCache.get(parent);
    let r = clipOf(parent);
    const cs = getComputedStyle(parent);
    if (cs.overflowX !== 'visible' || cs.overflowY !== 'visible') {
      const b = parent.getBoundingClientRect();
      r = [Math.max(r[0], b.left), Math.max(r[1], b.top), Math.min(r[2], b.right), Math.min(r[3], b.bottom)];
    }
    clipCache.set(parent, r);
    return r;
  }
  const box = (r) => [r.left, r.top, r.right, r.bottom];
  function textBox(node) {
    const range = document.createRange();
    range.selectNodeContents(node);
    return box(range.getBoundingClientRect());
  }
  // Whole box inside the clip; the costlier hit test runs later (_HIT_TEST_JS) on fewer boxes.
  function shown(el, b) {
    if (b[2] - b[0] < 3 || b[3] - b[1] < 3) return false;
    const c = clipOf(el);
    return !(b[0] < c[0] - 0.01 || b[1] < c[1] - 0.01 || b[2] > c[2] + 0.01 || b[3] > c[3] + 0.01);
  }
  window.__rfElements = [];
  const add = (el, c) => { c.ref = window.__rfElements.length; window.__rfElements.push(el); cands.push(c); };
  const units = [], cands = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const t = norm(n.textContent);
    const p = n.parentElement;
    if (!t || !p || ['SCRIPT', 'STYLE'].includes(p.tagName)) continue;
    if (p.tagName === 'OPTION') {  // a closed <select> shows one option: count them all
      const sel = p.closest('select');
      if (sel && visible(sel)) units.push(t);
      continue;
    }
    if (!visible(p)) continue;
    const b = textBox(n), c = clipOf(p);
    if (b[2] - b[0] <= 0 || b[3] - b[1] <= 0) continue;
    if (b[2] <= c[0] || b[0] >= c[2] || b[3] <= c[1] || b[1] >= c[3]) continue;
    units.push(t);
  }
  for (const inp of document.querySelectorAll('input, textarea')) {
    if (!visible(inp)) continue;
    for (const t of [inp.value, inp.placeholder]) if (t && norm(t)) units.push(norm(t));
  }
  for (const el of document.querySelectorAll('[data-rf]')) {
    if (!visible(el)) continue;
    const kind = el.dataset.rfKind;
    const isText = el.dataset.rf === 'text';
    const text = isText ? norm(el.textContent) : el.dataset.rfLabel;
    const b = isText && kind !== 'menu' ? textBox(el.firstChild) : box(el.getBoundingClientRect());
    if (!shown(el, b)) continue;
    const bucket = isText ? 'chrome-text' : (kind === 'tool' ? 'tool' : 'chrome-icon');
    add(el, {ui_type: isText ? 'text' : 'icon', kind, text, bucket, bbox: b});
  }
  for (const tile of document.querySelectorAll('.mwt')) {
    for (const el of tile.querySelectorAll('*')) {
      if (!visible(el)) continue;
      if (el.tagName === 'INPUT' && (el.type === 'checkbox' || el.type === 'radio')) {
        const lab = el.closest('label');
        let text = lab ? norm(lab.textContent) : '';
        if (!text && el.nextSibling) text = norm(el.nextSibling.textContent || '');
        const b = box(el.getBoundingClientRect());
        if (text && shown(el, b)) add(el, {ui_type: 'icon', kind: el.type, text, bucket: 'tile-icon', bbox: b});
        continue;
      }
      const texts = [...el.childNodes].filter((n) => n.nodeType === 3 && norm(n.textContent));
      if (texts.length !== 1) continue;
      const text = norm(texts[0].textContent);
      if (norm(el.textContent) !== text || ['SCRIPT', 'STYLE', 'OPTION', 'SELECT'].includes(el.tagName)) continue;
      let kind = 'text', whole = false;
      if (el.tagName === 'BUTTON') { kind = 'button'; whole = true; }
      else if (el.classList.contains('ui-tabs-anchor')) { kind = 'tab'; whole = true; }
      else if (el.classList.contains('ui-accordion-header')) { kind = 'section'; whole = true; }
      else if (el.tagName === 'A' || el.classList.contains('alink')) kind = 'link';
      else if (el.tagName === 'LABEL') kind = 'option';
      const b = whole ? box(el.getBoundingClientRect()) : textBox(texts[0]);
      if (shown(el, b)) add(el, {ui_type: 'text', kind, text, bucket: 'tile-text', bbox: b});
    }
  }
  return JSON.stringify({units, cands});
}
