// The language coverage test's Node.js program: burns CPU in nxvHot for the
// number of seconds given as its argument.
'use strict';

function nxvHot(n) {
  let x = 1;
  for (let i = 0; i < n; i++) {
    x = (x * 48271 + 11) % 2147483647;
  }
  return x;
}

const end = Date.now() + Number(process.argv[2]) * 1000;
let sink = 0;
while (Date.now() < end) {
  sink += nxvHot(200000);
}
if (sink === 42) console.log(sink);
