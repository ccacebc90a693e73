/* The trivial dynamically linked C program that start-up is measured against. */
int
main(void)
{
	return 0;
}
