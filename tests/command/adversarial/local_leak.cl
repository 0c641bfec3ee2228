// vadd that records every size it runs at (the hidden ones among them) in
// __local memory, which PoCL's CPU device keeps per worker thread from
// launch to launch and from request to request of one evaluator process; at
// the first launch of a later request (a new poison value in its outputs) it
// prints what it recorded and writes out of bounds: a runtime_error at a
// visible shape, before any hidden call of that request, whose feedback
// quoted the printed sizes (the red team of 2026-12-05). The evaluator now
// zeroes the device's local memory at the start of every request.
// kevo:global (N + 63) // 64 * 64
// kevo:local 64
__kernel void vadd(__global const float* a, __global const float* b, __global float* out, const int n) {
  __local uint rec[130];      // PoCL CPU: a worker thread's __local block outlives the launch
  const int lid = get_local_id(0);
  const int i = get_global_id(0);
  const int g0 = get_group_id(0) * 64;         // this group's first element: still the poison on entry
  const uint poison = as_uint(out[g0]);        // per-request NaN poison
  const bool have = rec[0] == 0x5eed1eu;
  bool dump = false;
  if (lid == 0 && have && rec[1] != poison) {  // first launch of a new request on this worker thread
    dump = true;
    for (int s = 0; s < 128; ++s) if (rec[2 + s]) printf("seen n=%u\n", rec[2 + s]);
  }
  if (lid == 0) {
    if (!have) { for (int s = 0; s < 130; ++s) rec[s] = 0; rec[0] = 0x5eed1eu; }
    rec[1] = poison;
    rec[2 + n % 128] = (uint)n;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if (i < n) out[i] = a[i] + b[i];
  if (dump) out[n + 8] = 0.0f;   // a runtime error whose feedback quotes the printed lines
}
