/*
 * cmd_agent: `xpool agent` - the node agent (src/agent): discover the
 * machine's devices, register with the controller, run what it assigns.
 * `--discover` only prints what discovery found.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../agent/agent.h"
#include "../client/client.h"
#include "../core/model/model.h"
#include "../lib/parse.h"
#include "../lib/timefmt.h"
#include "cli.h"
#include "flags.h"
#include "../lib/fileio.h"

/* --device-mode, --timeslice-replicas and --overcommit-memory into o: how
 * the node's accelerators are shared; -1 with err naming the flag */
static int device_flags(struct xp_flag *flags, struct xp_agent_opts *o, struct xp_err *err)
{
	static const char *const dmodes[] = { "shared", "whole", "timeslice", NULL };
	if (xp_flag_get(flags, "device-mode")->given) {
		if (xp_flag_choice(flags, "device-mode", dmodes, &o->device_mode, err) < 0)
			return -1;
		o->device_mode = xp_mode_parse(dmodes[o->device_mode]) + 1;
	}
	if (xp_flag_get(flags, "timeslice-replicas")->given) {
		const char *t = xp_flag_get(flags, "timeslice-replicas")->sval;
		char *end = NULL;
		long v = t ? strtol(t, &end, 10) : 0;
		int ts = o->device_mode == XP_MODE_TIMESLICE + 1;
		if (!end || end == t || *end || v < 1 || v > XP_TIMESLICE_MAX || !ts)
			return xp_errf(err, XP_EINVAL,
				       "--timeslice-replicas: expected 1 to %d with --device-mode "
				       "timeslice, got '%s'%s",
				       XP_TIMESLICE_MAX, t ? t : "", ts ? "" : " without it");
		o->replicas = (uint8_t)v;
	}
	if (xp_flag_get(flags, "overcommit-memory")->given) {
		double f = 0;
		const char *v = xp_flag_get(flags, "overcommit-memory")->sval;
		if (xp_parse_double(v, &f) < 0 || !(f >= 1) || f > XP_OVERCOMMIT_MAX / 100.0)
			return xp_errf(
				err, XP_EINVAL,
				"--overcommit-memory: expected a factor from 1 to %d, got '%s'",
				XP_OVERCOMMIT_MAX / 100, v);
		o->overcommit = (uint16_t)(f * 100 + 0.5);
	}
	return 0;
}

int xp_verb_agent(int argc, char **argv)
{
	struct xp_flag flags[] = {
		{ "server", XP_FLAG_STR, "ADDR",
		  "controller address (else $XPOOL_ADDR, the config file)" },
		{ "ca", XP_FLAG_STR, "FILE",
		  "https://: the CA file the controller's certificate is verified against (else "
		  "$XPOOL_CA, the config file, the system's CAs)" },
		{ "token", XP_FLAG_STR, "TOKEN",
		  "the node's credential (xpn_...), a bootstrap token (xpb_...) or an admin "
		  "token (else --token-file, $XPOOL_TOKEN, the config file); visible in ps: "
		  "prefer --token-file" },
		{ "token-file", XP_FLAG_STR, "FILE",
		  "read the token from the first line of FILE (kept off the command line)" },
		{ "credential-file", XP_FLAG_STR, "FILE",
		  "where the node's credential is kept (default WORK/node.credential, mode "
		  "0600): a bootstrap token (xpb_...) is traded for it once" },
		{ "node-name", XP_FLAG_STR, "NAME", "the node's name (default: the host name)" },
		{ "devices", XP_FLAG_STR, "FILE",
		  "report the devices of this descriptor instead of the real ones (emulation, "
		  "tests)" },
		{ "work", XP_FLAG_STR, "DIR", "task folders and output" },
		{ "cgroup-root", XP_FLAG_STR, "DIR",
		  "where cgroups are: a v2 mount, or the folder of the v1 hierarchies (memory/, "
		  "cpu/, "
		  "cpuset/); default /sys/fs/cgroup" },
		{ "limits", XP_FLAG_STR, "MODE",
		  "CPU and memory limits: required (a task whose limits cannot be set is not run, "
		  "reason limits), auto (required where cgroups are writable, else off), off" },
		{ "no-limits", XP_FLAG_BOOL, NULL,
		  "run tasks without CPU and memory limits, on purpose (--limits off)" },
		{ "grace", XP_FLAG_STR, "DURATION", "SIGTERM to SIGKILL when a task is cancelled" },
		{ "heartbeat", XP_FLAG_STR, "DURATION",
		  "override the controller's heartbeat period" },
		{ "mig-keep-warm", XP_FLAG_STR, "DURATION",
		  "keep an ended replica's MIG instance this long for the next slice of its "
		  "profile (default 0: destroyed at once)" },
		{ "output-resend", XP_FLAG_STR, "DURATION",
		  "HA: after a leader change, send the output of tasks that ended within this "
		  "long again, so the new leader has it (default 1h; 0: never)" },
		{ "mig-mode-change", XP_FLAG_BOOL, NULL,
		  "carry out the controller's MIG mode changes on idle GPUs (the admin must also "
		  "allow them for the node: xpool nodes set NAME --mig-mode-change allow); "
		  "default: refuse them" },
		{ "dedicated", XP_FLAG_BOOL, NULL,
		  "the node takes only jobs that name it (--node NAME), as xpool dev's host does" },
		{ "device-mode", XP_FLAG_STR, "MODE",
		  "how the accelerators are shared: shared (fractions, enforced by the vGPU "
		  "interposer; default), whole (one job each) or timeslice (fractions with "
		  "nothing isolated); GPUs in MIG mode stay mig" },
		{ "timeslice-replicas", XP_FLAG_STR, "N",
		  "with --device-mode timeslice: each accelerator takes N one-GPU jobs at once "
		  "(1..32), like NVIDIA's time-slicing replicas; nothing isolated" },
		{ "overcommit-memory", XP_FLAG_STR, "F",
		  "admit device memory up to F x each accelerator's (1..10; default 1)" },
		{ "address", XP_FLAG_STR, "HOST",
		  "where this node's service replicas are reached (default: the address it "
		  "reaches the controller from)" },
		{ "ports", XP_FLAG_STR, "LO-HI",
		  "the ports service replicas get (XPOOL_PORT; default 30000-32767)" },
		{ "stop-tasks", XP_FLAG_BOOL, NULL,
		  "on exit, end running tasks too (default: they run on; a restart adopts them)" },
		{ "discover", XP_FLAG_BOOL, NULL,
		  "print the discovered node and its devices, then exit" },
		{ "output", XP_FLAG_STR, "FORMAT", "with --discover: table or json", 'o' },
		{ NULL, 0, NULL, NULL },
	};
	struct xp_agent_opts o;
	struct xp_err err = { 0 };
	struct xp_client_config cfg;
	int help, status = 2;
	int64_t ms;

	memset(&o, 0, sizeof(o));
	memset(&cfg, 0, sizeof(cfg));
	xp_flag_get(flags, "work")->sval = (char *)"/var/lib/xpool/agent";
	xp_flag_get(flags, "output")->sval = (char *)"table";
	xp_flag_get(flags, "limits")->sval = (char *)"required";
	if (xp_flags_parse(flags, argc, argv, &help, &err) < 0)
		goto usage;
	if (help) {
		xp_flags_usage(
			stdout, "xpool agent --server ADDR --token T [flags]",
			"The node agent: discovers this machine's devices (NVML, ROCm SMI, DCMI,\n"
			"CNDev, sysfs FPGAs, hwloc), registers the node, heartbeats, and runs\n"
			"the tasks the controller assigns as real processes.",
			flags);
		status = 0;
		goto out;
	}
	o.node_name = xp_flag_get(flags, "node-name")->sval;
	o.devices_file = xp_flag_get(flags, "devices")->sval;
	o.work = xp_flag_get(flags, "work")->sval;
	o.cgroup_root = xp_flag_get(flags, "cgroup-root")->sval;
	o.stop_tasks = xp_flag_get(flags, "stop-tasks")->bval;
	o.dedicated = xp_flag_get(flags, "dedicated")->bval;
	if (xp_flag_get(flags, "grace")->given) {
		if (xp_duration_parse(xp_flag_get(flags, "grace")->sval, 3600000, &ms) < 0) {
			xp_errf(&err, XP_EINVAL, "--grace: expected a duration such as 10s");
			goto usage;
		}
		o.grace_ms = (int)ms;
	}
	if (xp_flag_get(flags, "heartbeat")->given) {
		if (xp_duration_parse(xp_flag_get(flags, "heartbeat")->sval, 600000, &ms) < 0 ||
		    ms < 100) {
			xp_errf(&err, XP_EINVAL, "--heartbeat: expected a duration 100ms..10m");
			goto usage;
		}
		o.heartbeat_ms = (int)ms;
	}
	if (xp_flag_get(flags, "mig-keep-warm")->given) {
		if (xp_duration_parse(xp_flag_get(flags, "mig-keep-warm")->sval, 86400000, &ms) <
		    0) {
			xp_errf(&err, XP_EINVAL, "--mig-keep-warm: expected a duration 0..24h");
			goto usage;
		}
		o.mig_keep_warm_ms = (int)ms;
	}
	o.output_resend_s = 3600;
	if (xp_flag_get(flags, "output-resend")->given) {
		if (xp_duration_parse(xp_flag_get(flags, "output-resend")->sval, 7 * 86400000LL,
				      &ms) < 0) {
			xp_errf(&err, XP_EINVAL, "--output-resend: expected a duration 0..7d");
			goto usage;
		}
		o.output_resend_s = (int)(ms / 1000);
	}
	o.mig_mode_change = xp_flag_get(flags, "mig-mode-change")->bval;
	static const char *const modes[] = { "required", "auto", "off", NULL };
	if (xp_flag_choice(flags, "limits", modes, &o.limits, &err) < 0)
		goto usage;
	if (xp_flag_get(flags, "no-limits")->bval) {
		if (xp_flag_get(flags, "limits")->given && o.limits != XP_LIMITS_OFF) {
			xp_errf(&err, XP_EINVAL,
				"--no-limits: give --no-limits or --limits, not both");
			goto usage;
		}
		o.limits = XP_LIMITS_OFF;
	}
	if (device_flags(flags, &o, &err) < 0)
		goto usage;
	o.address = xp_flag_get(flags, "address")->sval;
	if (xp_flag_get(flags, "ports")->given) {
		const char *v = xp_flag_get(flags, "ports")->sval;
		unsigned lo, hi;
		char end;
		if (sscanf(v, "%u-%u%c", &lo, &hi, &end) != 2 || lo < 1 || hi > 65535 || lo > hi) {
			xp_errf(&err, XP_EINVAL, "--ports: expected LO-HI within 1-65535, got '%s'",
				v);
			goto usage;
		}
		o.port_min = (uint16_t)lo;
		o.port_max = (uint16_t)hi;
	}
	static const char *const outputs[] = { "table", "json", NULL };
	int json;
	if (xp_flag_choice(flags, "output", outputs, &json, &err) < 0)
		goto usage;
	if (xp_flag_get(flags, "discover")->bval) {
		status = xp_agent_discover(&o, json, &err) < 0 ? xp_cli_fail("agent", &err, 1) : 0;
		goto out;
	}
	const char *tok = xp_flag_get(flags, "token")->sval;
	char *filetok = NULL;
	if (xp_flag_get(flags, "token-file")->given) {
		size_t len = 0;
		const char *tf = xp_flag_get(flags, "token-file")->sval;
		if (tok) {
			xp_errf(&err, XP_EINVAL,
				"--token-file: give --token or --token-file, not both");
			goto usage;
		}
		if (xp_read_file(tf, 4096, &filetok, &len, &err) < 0) {
			status = xp_cli_fail("agent", &err, 1);
			goto out;
		}
		filetok[strcspn(filetok, "\r\n")] = '\0';
		if (!filetok[0]) {
			free(filetok);
			xp_errf(&err, XP_EINVAL, "--token-file: %s: the first line is empty", tf);
			status = xp_cli_fail("agent", &err, 1);
			goto out;
		}
		tok = filetok;
	}
	int rrc = xp_client_config_resolve_ca(xp_flag_get(flags, "server")->sval, tok,
					      xp_flag_get(flags, "ca")->sval, &cfg, &err);
	free(filetok);
	if (rrc < 0) {
		status = xp_cli_fail("agent", &err, 1);
		goto out;
	}
	o.server = cfg.addr;
	o.token = cfg.token;
	o.ca = cfg.ca;
	o.credential = xp_flag_get(flags, "credential-file")->sval;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = xp_agent_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	status = xp_agent_run(&o, &err) < 0 ? xp_cli_fail("agent", &err, 1) : 0;
	goto out;
usage:
	status = xp_cli_fail("agent", &err, 2);
out:
	xp_client_config_free(&cfg);
	xp_flags_free(flags);
	return status;
}
