# Kernel time against nnz: written by sparserl; run `gnuplot time_vs_nnz.gp` to redraw.
set terminal pngcairo noenhanced size 900,560 font 'sans,10'
set output '/work/main/docs/examples/bench-spmv-rl-h200/plots/time_vs_nnz.png'
set title 'Kernel time against nnz (median per run)'
set xlabel 'nonzeros'
set ylabel 'time (us)'
set logscale xy
set grid
set key outside right top
set datafile missing 'NaN'
plot '/work/main/docs/examples/bench-spmv-rl-h200/plots/time_vs_nnz.dat' index 0 using 1:2 with points pt 6 ps 1.2 lc rgb '#444444' title 'cuSPARSE', \
     '/work/main/docs/examples/bench-spmv-rl-h200/plots/time_vs_nnz.dat' index 1 using 1:2 with points pt 7 ps 0.8 lc rgb '#0072B2' title 'template', \
     '/work/main/docs/examples/bench-spmv-rl-h200/plots/time_vs_nnz.dat' index 2 using 1:2 with points pt 7 ps 0.8 lc rgb '#D55E00' title 'sft', \
     '/work/main/docs/examples/bench-spmv-rl-h200/plots/time_vs_nnz.dat' index 3 using 1:2 with points pt 7 ps 0.8 lc rgb '#009E73' title 'grpo-s1', \
     '/work/main/docs/examples/bench-spmv-rl-h200/plots/time_vs_nnz.dat' index 4 using 1:2 with points pt 7 ps 0.8 lc rgb '#CC79A7' title 'grpo-s2', \
     '/work/main/docs/examples/bench-spmv-rl-h200/plots/time_vs_nnz.dat' index 5 using 1:2 with points pt 7 ps 0.8 lc rgb '#E69F00' title 'ppo-s1', \
     '/work/main/docs/examples/bench-spmv-rl-h200/plots/time_vs_nnz.dat' index 6 using 1:2 with points pt 7 ps 0.8 lc rgb '#56B4E9' title 'ppo-s2', \
     '/work/main/docs/examples/bench-spmv-rl-h200/plots/time_vs_nnz.dat' index 7 using 1:2 with points pt 7 ps 0.8 lc rgb '#000000' title 'reinforce-s1', \
     '/work/main/docs/examples/bench-spmv-rl-h200/plots/time_vs_nnz.dat' index 8 using 1:2 with points pt 7 ps 0.8 lc rgb '#F0E442' title 'reinforce-s2'
