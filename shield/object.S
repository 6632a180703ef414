/* The shield's BPF object (build/shield/shield.bpf.o), embedded in the
 * daemon so that nothing but the binary is installed. */
	.section .rodata
	.balign 8
	.global shield_bpf_obj
shield_bpf_obj:
	.incbin SHIELD_BPF_OBJ
shield_bpf_obj_end:
	.balign 8
	.global shield_bpf_obj_len
shield_bpf_obj_len:
	.quad shield_bpf_obj_end - shield_bpf_obj
	.section .note.GNU-stack,"",@progbits
