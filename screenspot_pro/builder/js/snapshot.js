(seeds) => seeds.map((s) => {
  Math.seedrandom(s);
  genProblem();
  return document.querySelector('#area').outerHTML;
})
