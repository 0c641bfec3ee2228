// vadd that #includes a file of the user's (the test writes a header with
// a secret number outside every folder kevo gives the evaluator, and puts
// its path where KEVO_TEST_SECRET_PATH stands) and adds the number to
// out[0]: a wrong_answer whose mismatch quotes it ("the kernel has
// 4243.5"), so the secret reaches the feedback, the next prompt and the
// lineage. OpenCL C has no system calls, but the OpenCL compiler reads
// whatever the evaluator's process can. With "confine" the compile and run
// commands read only the system's trees and kevo's folders: the include
// fails to compile.
#include "KEVO_TEST_SECRET_PATH"
// kevo:global (N + 63) // 64 * 64
// kevo:local 64
__kernel void vadd(__global const float* a, __global const float* b, __global float* out, const int n) {
  const int i = get_global_id(0);
  if (i < n) out[i] = a[i] + b[i] + (i == 0 ? KEVO_SECRET : 0.0f);
}
