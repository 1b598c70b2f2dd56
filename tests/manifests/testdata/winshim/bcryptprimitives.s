# bcryptprimitives.dll for Wine 8.0 (Debian 12), which lacks it. Go >= 1.22
# programs for Windows load it at start-up for ProcessPrng and die without
# it. This test-only DLL implements ProcessPrng with RtlGenRandom
# (advapi32!SystemFunction036), which Wine has; nothing of it is shipped.
#
# BOOL WINAPI ProcessPrng(PBYTE pbData, SIZE_T cbData)
# (the Go runtime asks for a few bytes at a time, well inside RtlGenRandom's ULONG)

	.text
	.globl	DllMain
DllMain:
	movl	$1, %eax
	ret

	.globl	ProcessPrng
ProcessPrng:
	subq	$40, %rsp			# shadow space, 16-byte alignment
	call	*__imp_SystemFunction036(%rip)	# BOOLEAN RtlGenRandom(PVOID, ULONG)
	movzbl	%al, %eax			# BOOLEAN -> BOOL
	addq	$40, %rsp
	ret
